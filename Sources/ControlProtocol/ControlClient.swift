import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A client of `ControlServer`: one request line out, one response line back, over a fresh connection.
public struct ControlClient: Sendable {
    /// Why no response came back.
    public struct Unreachable: Error, Hashable, Sendable, CustomStringConvertible {
        /// The path and the system's reason.
        public var description: String
    }

    /// The socket's path.
    public let path: String

    /// A client for the socket at `path`.
    public init(path: String) { self.path = path }

    /// Sends a request object and returns the response object's text (one line, no newline).
    /// Throws `Unreachable` when the socket cannot be reached or closes before answering.
    public func send(_ request: [String: JSONValue]) throws(Unreachable) -> String {
        try send(line: JSONValue.object(request).text)
    }

    /// Sends one raw line and returns the response line. Throws `Unreachable`.
    public func send(line: String) throws(Unreachable) -> String {
        let fd = try connect(sending: line)
        defer { SocketCalls.close(fd) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !response.contains(UInt8(ascii: "\n")) {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Unreachable(description: "\(path): closed before answering") }
            response += buffer[..<count]
        }
        return String(decoding: response.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    /// Sends a request and hands every line that comes back to `line`, the response first, until the server closes
    /// the connection or `line` returns false: for `events` with `follow`, whose answer is a stream. Throws
    /// `Unreachable` when the socket cannot be reached or closes before the first line.
    public func stream(_ request: [String: JSONValue], line: (String) -> Bool) throws(Unreachable) {
        _ = try stream(request, deadline: nil, line: line)
    }

    /// A connection to the socket with `line` sent on it. Throws `Unreachable`.
    func connect(sending line: String) throws(Unreachable) -> Int32 {
        guard let address = SocketCalls.unixAddress(path) else {
            throw Unreachable(description: "\(path): too long for a Unix socket")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unreachable(description: "socket: \(String(cString: strerror(errno)))") }
        guard SocketCalls.connect(fd, to: address) else {
            let reason = String(cString: strerror(errno))
            SocketCalls.close(fd)
            throw Unreachable(description: "\(path): \(reason)")
        }
        guard SocketCalls.sendAll(fd, (line + "\n").utf8) else {
            SocketCalls.close(fd)
            throw Unreachable(description: "\(path): connection closed")
        }
        return fd
    }

    /// Whether a response line says `"ok":true`.
    public static func isOK(_ response: String) -> Bool {
        (try? JSONValue(parsing: response))?["ok"] == .bool(true)
    }
}
