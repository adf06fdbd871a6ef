import LocalIO

#if canImport(Glibc)
import Glibc
#endif

/// One connection to the view, on its own thread: a request head read within `headLimit`, then its file, its
/// refusal, or its WebSocket (`PageSocket`), and the connection closed.
enum ViewConnection {
    /// How long a client may take to send its whole request head, however it trickles it: it is told 408 then, and
    /// the connection's descriptor and thread are free again.
    static let headLimit: Duration = .seconds(30)

    /// Serves `connection` and closes it.
    static func serve(_ connection: Int32, handler: ViewHandler) {
        defer { close(connection) }
        SocketCalls.setTimeout(.send, of: connection, to: headLimit)
        guard let (bytes, end) = readHead(connection) else { return }
        guard let request = HTTPRequestHead(parsing: bytes[..<end]) else {
            _ = SocketCalls.sendAll(connection, HTTPResponse.text(400, "blemu ui: not an HTTP/1.1 request").bytes)
            return
        }
        switch handler.reply(to: request) {
        case .response(let response):
            _ = SocketCalls.sendAll(connection, response.bytes)
        case .webSocket:
            let (response, upgraded) = WebSocketHandshake.response(to: request)
            guard upgraded else {
                _ = SocketCalls.sendAll(connection, response.bytes)
                return
            }
            guard SocketCalls.sendAll(connection, WebSocketHandshake.bytes(of: response)) else { return }
            // What the page sent after its head (a first frame, already) belongs to the WebSocket.
            PageSocket.serve(connection, watcher: handler.watcher, pending: Array(bytes[(end + 4)...]))
        }
    }

    /// The bytes read up to and past the head's end, and where the empty line that ends it starts; nil when the
    /// client closed, took longer than `headLimit` (told 408), or sent a head longer than `HTTPRequestHead.longest`
    /// (told 431).
    private static func readHead(_ connection: Int32) -> (bytes: [UInt8], end: Int)? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let terminator = Array("\r\n\r\n".utf8)
        let deadline = ContinuousClock.now + headLimit
        func timedOut() -> (bytes: [UInt8], end: Int)? {
            let refusal = HTTPResponse.text(
                408, "blemu ui: no whole request within \(headLimit.components.seconds) s")
            _ = SocketCalls.sendAll(connection, refusal.bytes)
            return nil
        }
        while true {
            if let range = bytes.firstRange(of: terminator) { return (bytes, range.lowerBound) }
            guard bytes.count <= HTTPRequestHead.longest else {
                let refusal = HTTPResponse.text(
                    431, "blemu ui: request head longer than \(HTTPRequestHead.longest) bytes")
                _ = SocketCalls.sendAll(connection, refusal.bytes)
                return nil
            }
            // Each read waits only for what is left of the whole head's time (a receive timeout is per call).
            let left = deadline - ContinuousClock.now
            guard left > .milliseconds(1) else { return timedOut() }
            SocketCalls.setTimeout(.receive, of: connection, to: left)
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return timedOut() }
            guard count > 0 else { return nil }
            bytes += buffer[..<count]
        }
    }
}
