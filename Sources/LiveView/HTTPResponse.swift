/// A response as the view sends it (RFC 9112, section 4): a status, header fields and a whole body, with
/// Content-Length, and `Connection: close`: each connection carries one request (a page's four files cost four
/// loopback connects), so none idles after its answer.
struct HTTPResponse: Sendable {
    /// The status code (200, 403, ...).
    var status: Int
    /// The header fields besides Content-Length and Connection, in order.
    var fields: [(name: String, value: String)]
    /// The body.
    var body: [UInt8]

    /// A response with `status`, `fields` and `body`.
    init(status: Int, fields: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.fields = fields
        self.body = body
    }

    /// A plain-text response: a refusal's or an error's one line.
    static func text(_ status: Int, _ line: String) -> HTTPResponse {
        HTTPResponse(
            status: status, fields: [("Content-Type", "text/plain; charset=utf-8")], body: Array((line + "\n").utf8))
    }

    /// The bytes on the wire: status line, fields, the empty line, the body.
    var bytes: [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// The reason phrase of the codes the view sends (RFC 9110, section 15).
    static func reason(_ status: Int) -> String {
        switch status {
        case 101: "Switching Protocols"
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        default: "Status"
        }
    }
}
