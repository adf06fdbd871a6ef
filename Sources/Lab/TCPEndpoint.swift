import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `HOST:PORT` on the host's network (`[v6]:PORT` for an IPv6 literal): where an air listens for other airs, or
/// the air it links to (docs/lab.md, "Airs on several machines").
public struct TCPEndpoint: Sendable, Equatable, Codable, CustomStringConvertible {
    /// A name or an address literal.
    public let host: String
    /// 1-65535.
    public let port: UInt16

    /// "HOST:PORT", with brackets around an IPv6 literal.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `HOST:PORT` or `[V6]:PORT`; nil when either half is missing or the port is not 1-65535.
    public init?(_ text: String) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            port = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let number = UInt16(port), number > 0 else { return nil }
        self.host = String(host)
        self.port = number
    }

    /// A failed call, with what was being done and errno's or getaddrinfo's text.
    public struct Failure: Error, CustomStringConvertible {
        /// The sentence for the user.
        public let description: String
    }

    /// The addresses `host` resolves to for a stream socket (getaddrinfo(3)).
    private func resolved(passive: Bool) throws(Failure) -> [(family: Int32, address: Data)] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = passive ? AI_PASSIVE : 0
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw Failure(description: "cannot resolve \(self): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [(Int32, Data)] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr {
                addresses.append(
                    (current.pointee.ai_family, Data(bytes: address, count: Int(current.pointee.ai_addrlen))))
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }

    /// A socket listening on this endpoint (its first address), close-on-exec.
    public func listen() throws(Failure) -> Int32 {
        guard let (family, address) = try resolved(passive: true).first else {
            throw Failure(description: "\(self) resolves to no address")
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withUnsafeBytes {
            bind(fd, $0.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
        }
        guard bound == 0, Glibc.listen(fd, 4) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot listen on \(self): \(reason)")
        }
        return fd
    }

    /// A connected socket with Nagle's algorithm off, close-on-exec; throws when no address takes the connection
    /// within `timeout` each.
    public func connect(timeout: Duration = .seconds(3)) throws(Failure) -> Int32 {
        var reason = "no address"
        for (family, address) in try resolved(passive: false) {
            let fd = socket(
                family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            let started = address.withUnsafeBytes {
                Glibc.connect(fd, $0.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
            }
            if started == 0 || errno == EINPROGRESS, Self.finishConnecting(fd, timeout: timeout, reason: &reason) {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
                LoopbackTCP.setOption(fd, TCP_NODELAY)
                return fd
            }
            if started != 0 && errno != EINPROGRESS { reason = String(cString: strerror(errno)) }
            close(fd)
        }
        throw Failure(description: "cannot connect to \(self): \(reason)")
    }

    /// Waits for a non-blocking connect(2) to finish: writable, then SO_ERROR says how it went.
    private static func finishConnecting(_ fd: Int32, timeout: Duration, reason: inout String) -> Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
        let milliseconds = Int32(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&fds, 1, milliseconds) == 1 else {
            reason = "no answer within \(timeout)"
            return false
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        if error != 0 { reason = String(cString: strerror(error)) }
        return error == 0
    }
}
