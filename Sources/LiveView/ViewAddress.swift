/// Where `blemu ui` listens: `HOST:PORT`, `[IPV6]:PORT`, or a port alone (loopback). Port 0 takes a free port.
public struct ViewAddress: Hashable, Sendable, CustomStringConvertible {
    /// Why an address was refused, for a usage error.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What was wrong, naming the text.
        public var description: String
    }

    /// The numeric host: an IPv4 address, or an IPv6 one without brackets.
    public let host: String
    /// The TCP port; 0 until the system picks one.
    public let port: UInt16

    /// The address for `host` (numeric, or `localhost`) and `port`.
    public init(host: String, port: UInt16) {
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
    }

    /// Parses `HOST:PORT`, `[IPV6]:PORT` or `PORT`; throws `ParseError`.
    public init(parsing text: String) throws(ParseError) {
        func port(_ digits: Substring) throws(ParseError) -> UInt16 {
            guard let port = UInt16(digits) else {
                throw ParseError(description: "`\(text)`: the port must be a number from 0 to 65535")
            }
            return port
        }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw ParseError(description: "`\(text)`: expected [IPV6]:PORT") }
            self.init(host: String(text[text.index(after: text.startIndex)..<close]), port: try port(rest.dropFirst()))
        } else if let colon = text.lastIndex(of: ":") {
            guard !text[..<colon].contains(":") else {
                throw ParseError(description: "`\(text)`: write an IPv6 address in brackets, [::1]:8080")
            }
            self.init(host: String(text[..<colon]), port: try port(text[text.index(after: colon)...]))
        } else {
            self.init(host: "127.0.0.1", port: try port(Substring(text)))
        }
        guard isIPv4 || isIPv6 else {
            throw ParseError(description: "`\(text)`: the host must be an IP address or localhost")
        }
    }

    /// Whether only this machine can reach it (127.0.0.0/8 or ::1): then no token is needed.
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    /// `HOST:PORT` as a browser writes it in a URL and the Host header (brackets around IPv6).
    public var description: String { hostName + ":\(port)" }

    /// The host as a URL writes it: brackets around IPv6.
    var hostName: String { isIPv6 ? "[\(host)]" : host }

    /// The same host with another port: the one the system chose for port 0.
    func with(port: UInt16) -> ViewAddress { ViewAddress(host: host, port: port) }

    private var isIPv4: Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Whether the host is an IPv6 address.
    var isIPv6: Bool { host.contains(":") && host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } }
}
