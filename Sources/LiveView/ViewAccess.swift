import LocalIO

/// Who may use the view. A page elsewhere must not steer the device through the user's browser: a request whose
/// Host is not the view's own is refused (DNS rebinding: a name the attacker controls, pointed at 127.0.0.1), and so
/// is one whose Origin is another site's (a cross-site WebSocket carries the browser's cookies but not a same
/// Origin: RFC 6455 section 10.2). Beyond loopback a token is needed as well: given once as `?token=` and then kept
/// in an HttpOnly, SameSite=Strict cookie, so assets and the WebSocket carry it without the page's script seeing it.
struct ViewAccess: Sendable {
    /// Why a request was refused: the 403's body says it.
    enum Refusal: String, Error, Sendable {
        case token = "blemu ui: wrong or missing token"
        case origin = "blemu ui: foreign origin refused"
    }

    /// The token every request must carry, or nil (loopback without `--ui-token`).
    let token: String?
    /// The host names accepted in Host (lowercased, with the listening port after them); empty accepts any Host,
    /// whose Origin must then match it.
    let names: Set<String>
    /// More `host:port` values accepted whatever the port listened on (a forwarded address).
    let extraHosts: Set<String>

    /// The policy for a view at `address`: loopback accepts its own names (127.0.0.1, localhost, [::1]) and
    /// `extraHosts` (a forwarded address, such as the lab's); any other address accepts every Host but needs the
    /// token.
    init(address: ViewAddress, token: String?, extraHosts: [String]) {
        self.token = token
        names = address.isLoopback ? [address.hostName, "localhost", "127.0.0.1", "[::1]"] : []
        self.extraHosts = Set(extraHosts.map { $0.lowercased() })
    }

    /// Nil when the request, to a view listening on `port`, may go on, else why not.
    func refusal(for request: HTTPRequestHead, port: UInt16) -> Refusal? {
        guard let host = request.field("host")?.lowercased() else { return .origin }
        if !names.isEmpty && !extraHosts.contains(host) && !names.map({ "\($0):\(port)" }).contains(host) {
            return .origin
        }
        if let origin = request.field("origin")?.lowercased(), origin != "http://\(host)" {
            return .origin
        }
        guard let token else { return nil }
        let offered = request.queryValue("token") ?? cookie(in: request, port: port)
        return offered.map { Self.same($0, token) } == true ? nil : .token
    }

    /// The cookie that keeps the token: one per port, since browsers share a host's cookies across ports.
    static func cookieName(port: UInt16) -> String { "blemu-ui-\(port)" }

    /// The Set-Cookie value for a request to a view on `port` that brought a valid `?token=`, else nil.
    func cookie(for request: HTTPRequestHead, port: UInt16) -> String? {
        guard let token, request.query.contains(where: { $0.name == "token" && Self.same($0.value, token) }) else {
            return nil
        }
        return "\(Self.cookieName(port: port))=\(token); Path=/; HttpOnly; SameSite=Strict"
    }

    /// The token's cookie among the request's, if any.
    private func cookie(in request: HTTPRequestHead, port: UInt16) -> String? {
        for header in request.fields("cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingWhitespace() == Self.cookieName(port: port) {
                    return String(parts[1])
                }
            }
        }
        return nil
    }

    /// Compares in time independent of where the strings differ, so the token cannot be guessed byte by byte.
    static func same(_ offered: String, _ token: String) -> Bool {
        let a = Array(offered.utf8)
        let b = Array(token.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}
