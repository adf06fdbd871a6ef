import Foundation

/// HTTP/1.1 and WebSocket (RFC 6455) spoken by hand over a loopback TCP socket, blocking, with a 5 s receive
/// timeout: a test sets exactly the headers a browser or an attacker's page would (Host, Origin, Cookie), which a
/// client library would set for it. One task uses a connection at a time.
final class PlainHTTP: @unchecked Sendable {
    /// Why an exchange failed.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A response's status code, headers (names lowercased) and body.
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    private let fd: Int32
    private var pending: [UInt8] = []

    /// A connection to 127.0.0.1:`port`.
    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw Failure(description: "connect to port \(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit { closeOnce() }

    private var isClosed = false

    /// Closes the connection now (a page going away).
    func close() { closeOnce() }

    private func closeOnce() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Sends a GET of `path` with `headers` and reads the response head, and the body unless it upgrades.
    func get(_ path: String, headers: [String: String]) throws -> Response {
        let lines = ["GET \(path) HTTP/1.1"] + headers.map { "\($0.key): \($0.value)" } + ["", ""]
        try write(Array(lines.joined(separator: "\r\n").utf8))
        let head = try readHead()
        var response = head
        if head.status != 101, let length = head.headers["content-length"].flatMap(Int.init) {
            response.body = String(decoding: try read(count: length), as: UTF8.self)
        }
        return response
    }

    /// The headers of a WebSocket upgrade from a page at `origin` for `host`.
    static func upgrade(host: String, origin: String, cookie: String? = nil) -> [String: String] {
        var headers = [
            "Host": host, "Origin": origin, "Upgrade": "websocket", "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
        ]
        headers["Cookie"] = cookie
        return headers
    }

    /// The next text message the server sent (control frames skipped).
    func receiveText() throws -> String {
        while true {
            let head = try read(count: 2)
            var length = Int(head[1] & 0x7F)
            if length == 126 {
                length = try read(count: 2).reduce(0) { $0 << 8 | Int($1) }
            } else if length == 127 {
                length = try read(count: 8).reduce(0) { $0 << 8 | Int($1) }
            }
            let payload = try read(count: length)
            switch head[0] & 0x0F {
            case 0x1: return String(decoding: payload, as: UTF8.self)
            case 0x8: throw Failure(description: "the server closed the WebSocket")
            default: continue
            }
        }
    }

    /// Sends a text message, masked as a client must (RFC 6455 5.3).
    func sendText(_ text: String) throws {
        let payload = Array(text.utf8)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try write(frame)
    }

    private func readHead() throws -> Response {
        while true {
            if let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) {
                let text = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                pending.removeSubrange(..<end.upperBound)
                let lines = text.components(separatedBy: "\r\n")
                let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                        .trimmingCharacters(in: .whitespaces)
                }
                return Response(status: status, headers: headers, body: "")
            }
            try fill()
        }
    }

    private func read(count: Int) throws -> [UInt8] {
        while pending.count < count { try fill() }
        defer { pending.removeFirst(count) }
        return Array(pending.prefix(count))
    }

    private func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure(description: count == 0 ? "closed" : "no data within 5 s") }
        pending += buffer[..<count]
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard result > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            sent += result
        }
    }
}
