import LocalIO
import Testing

@testable import LiveView

/// Who gets through: the view's own Host and Origin, with the token where one is set; a rebinding name, another
/// site's page, and a wrong token do not.
@Suite struct ViewAccessTests {
    private func request(_ target: String, _ headers: [String: String]) -> HTTPRequestHead {
        let lines = ["GET \(target) HTTP/1.1"] + headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        return HTTPRequestHead(parsing: Array(lines.joined(separator: "\r\n").utf8))!
    }

    @Test func onLoopbackTheViewsOwnNamesPassAndOthersAreForeign() throws {
        let access = ViewAccess(address: try ViewAddress(parsing: "127.0.0.1:0"), token: nil, extraHosts: ["lab:7"])
        for host in ["127.0.0.1:8080", "localhost:8080", "[::1]:8080", "lab:7"] {
            #expect(access.refusal(for: request("/", ["Host": host]), port: 8080) == nil, "\(host)")
        }
        // DNS rebinding: the attacker's name resolves to 127.0.0.1, the browser sends it as Host.
        #expect(access.refusal(for: request("/", ["Host": "attacker.example:8080"]), port: 8080) == .origin)
        #expect(access.refusal(for: request("/", ["Host": "127.0.0.1:9999"]), port: 8080) == .origin)
        #expect(access.refusal(for: request("/", [:]), port: 8080) == .origin)
        // A page of another site opening the WebSocket: its own Origin, the view's Host.
        let crossSite = request("/ws", ["Host": "127.0.0.1:8080", "Origin": "http://attacker.example"])
        #expect(access.refusal(for: crossSite, port: 8080) == .origin)
        let sameSite = request("/ws", ["Host": "localhost:8080", "Origin": "http://localhost:8080"])
        #expect(access.refusal(for: sameSite, port: 8080) == nil)
    }

    @Test func aTokenIsTakenFromTheQueryOnceThenFromItsCookie() throws {
        let access = ViewAccess(address: try ViewAddress(parsing: "0.0.0.0:80"), token: "s3cret", extraHosts: [])
        let first = request("/?token=s3cret", ["Host": "10.0.0.2:80"])
        #expect(access.refusal(for: first, port: 80) == nil)
        #expect(access.cookie(for: first, port: 80) == "blemu-ui-80=s3cret; Path=/; HttpOnly; SameSite=Strict")
        let later = request("/app.js", ["Host": "10.0.0.2:80", "Cookie": "other=1; blemu-ui-80=s3cret"])
        #expect(access.refusal(for: later, port: 80) == nil)
        #expect(access.cookie(for: later, port: 80) == nil, "no cookie set again without ?token=")
        for wrong in [
            request("/", ["Host": "10.0.0.2:80"]), request("/?token=s3cre", ["Host": "10.0.0.2:80"]),
            request("/", ["Host": "10.0.0.2:80", "Cookie": "blemu-ui-81=s3cret"]),
        ] {
            #expect(access.refusal(for: wrong, port: 80) == .token)
        }
        // Beyond loopback any name may reach the view, but the Origin must be the Host it was reached by.
        let foreign = request(
            "/ws", ["Host": "10.0.0.2:80", "Origin": "http://10.0.0.3", "Cookie": "blemu-ui-80=s3cret"])
        #expect(access.refusal(for: foreign, port: 80) == .origin)
    }

    @Test func tokensCompareWholeAndRandomOnesDiffer() {
        #expect(ViewAccess.same("abc", "abc"))
        #expect(!ViewAccess.same("abc", "abd") && !ViewAccess.same("ab", "abc") && !ViewAccess.same("abcd", "abc"))
        let tokens = Set((0..<16).map { _ in RandomToken.make() })
        #expect(tokens.count == 16 && tokens.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }
}
