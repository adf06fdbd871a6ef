/// The server's side of the WebSocket opening handshake (RFC 6455, section 4.2): which requests are upgrades, and
/// the 101 that accepts one.
enum WebSocketHandshake {
    /// The GUID a server appends to the client's key (section 1.3).
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The 101 for `request`; else the 426 naming version 13 for an upgrade of another version (section 4.4), or the
    /// 400 for a request that is no upgrade or has no key (section 4.2.1: an HTTP error and no WebSocket).
    static func response(to request: HTTPRequestHead) -> (response: HTTPResponse, upgraded: Bool) {
        guard request.field("upgrade", contains: "websocket"), request.field("connection", contains: "upgrade"),
            let key = request.field("sec-websocket-key"), !key.isEmpty
        else {
            return (.text(400, "blemu ui: not a WebSocket upgrade (RFC 6455)"), false)
        }
        guard request.field("sec-websocket-version") == "13" else {
            var refusal = HTTPResponse.text(426, "blemu ui: WebSocket version 13 only")
            refusal.fields.append(("Sec-WebSocket-Version", "13"))
            return (refusal, false)
        }
        let accept = base64(SHA1.digest(Array((key + guid).utf8)))
        let fields = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept)]
        return (HTTPResponse(status: 101, fields: fields), true)
    }

    /// The 101's bytes: no Content-Length, no Connection: close, since the connection goes on as a WebSocket.
    static func bytes(of response: HTTPResponse) -> [UInt8] {
        var head = "HTTP/1.1 101 Switching Protocols\r\n"
        for (name, value) in response.fields { head += "\(name): \(value)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    /// `bytes` in base64 (RFC 4648, section 4), with padding.
    static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        for start in stride(from: 0, to: bytes.count, by: 3) {
            let chunk = bytes[start..<min(start + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for index in 0..<4 {
                out.append(
                    index <= chunk.count ? alphabet[Int(value >> (18 - 6 * UInt32(index)) & 0x3F)] : UInt8(ascii: "="))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
