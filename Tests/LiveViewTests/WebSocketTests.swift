import Testing

@testable import LiveView

/// The WebSocket's wire format as RFC 6455 gives it: the handshake's accept key (its section 1.3 example), frames a
/// browser sends (masked, in 7, 16 and 64-bit lengths, split across reads), and what a client may not send.
@Suite struct WebSocketTests {
    /// A client's frame: masked with `mask`, as section 5.3 requires.
    private func clientFrame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        switch payload.count {
        case ..<126: bytes.append(0x80 | UInt8(payload.count))
        case ..<65_536: bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: bytes += [0x80 | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> (8 * $0)) }
        }
        return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    @Test func theAcceptKeyIsTheRFCsExample() throws {
        let head = try #require(
            HTTPRequestHead(
                parsing: Array(
                    ("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUpgrade: websocket\r\n"
                        + "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                        + "Sec-WebSocket-Version: 13").utf8)))
        let (response, upgraded) = WebSocketHandshake.response(to: head)
        #expect(upgraded && response.status == 101)
        #expect(response.fields.first { $0.name == "Sec-WebSocket-Accept" }?.value == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let plain = try #require(HTTPRequestHead(parsing: Array("GET /ws HTTP/1.1\r\nHost: x".utf8)))
        #expect(WebSocketHandshake.response(to: plain).response.status == 400)
        // Another version: 426 with the one the view speaks (section 4.4).
        let old = try #require(
            HTTPRequestHead(
                parsing: Array(
                    ("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8").utf8)))
        let refusal = WebSocketHandshake.response(to: old)
        #expect(!refusal.upgraded && refusal.response.status == 426)
        #expect(refusal.response.fields.contains { $0.name == "Sec-WebSocket-Version" && $0.value == "13" })
    }

    @Test func shaOneAndBase64MatchTheirStandardsVectors() {
        // FIPS 180-4's "abc" and the empty message; RFC 4648's base64 vectors.
        #expect(WebSocketHandshake.base64(SHA1.digest(Array("abc".utf8))) == "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
        #expect(WebSocketHandshake.base64(SHA1.digest([])) == "2jmj7l5rSw0yVb/vlWAYkK/YBwk=")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(SHA1.digest(long).map { String($0, radix: 16) }.joined().hasPrefix("84983e44"))
        for (text, encoded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            #expect(WebSocketHandshake.base64(Array(text.utf8)) == encoded)
        }
    }

    @Test func framesOfEveryLengthAreReadWholeAcrossReads() throws {
        var reader = WebSocketFrameReader(longest: 1 << 20)
        let payloads = [
            [UInt8](repeating: 7, count: 5), [UInt8](repeating: 8, count: 300), [UInt8](repeating: 9, count: 70_000),
        ]
        let stream = payloads.flatMap { clientFrame(0x1, $0) }
        var frames: [WebSocketFrame] = []
        // A byte at a time at first, then in large pieces: a frame is only taken once all of it is there.
        var index = 0
        while index < stream.count {
            let step = index < 400 ? 1 : 4096
            reader.append(stream[index..<min(index + step, stream.count)])
            index += step
            while let frame = try reader.next() { frames.append(frame) }
        }
        #expect(frames.map(\.payload) == payloads)
        #expect(frames.allSatisfy { $0.fin && $0.opcode == .text })
    }

    @Test func whatAClientMayNotSendClosesWithItsCode() {
        func violation(_ bytes: [UInt8], longest: Int = 1024) -> UInt16? {
            var reader = WebSocketFrameReader(longest: longest)
            reader.append(bytes)
            do { _ = try reader.next() } catch { return error.code }
            return nil
        }
        let unmasked: [UInt8] = [0x81, 0x02, 0x68, 0x69]
        #expect(violation(unmasked) == 1002)
        #expect(violation(clientFrame(0x1 | 0x40, [1])) == 1002, "a reserved bit")
        #expect(violation(clientFrame(0x3, [1])) == 1002, "a reserved opcode")
        #expect(violation(clientFrame(0x9, [UInt8](repeating: 0, count: 126))) == 1002, "a long ping")
        #expect(violation(clientFrame(0x9, [1], fin: false)) == 1002, "a fragmented ping")
        #expect(violation(clientFrame(0x1, [UInt8](repeating: 0, count: 2000))) == 1009, "longer than the limit")
        #expect(violation(clientFrame(0x1, [1])) == nil)
    }

    @Test func serverFramesAreUnmaskedWithTheShortestLength() {
        #expect(WebSocketFrame.text("hi").bytes == [0x81, 0x02, 0x68, 0x69])
        let medium = WebSocketFrame(fin: true, opcode: .text, payload: [UInt8](repeating: 0, count: 300)).bytes
        #expect(Array(medium.prefix(4)) == [0x81, 126, 0x01, 0x2C] && medium.count == 304)
        let large = WebSocketFrame(fin: true, opcode: .text, payload: [UInt8](repeating: 0, count: 70_000)).bytes
        #expect(Array(large.prefix(10)) == [0x81, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70])
        #expect(WebSocketFrame.close(code: 1009, reason: "x").bytes == [0x88, 0x03, 0x03, 0xF1, 0x78])
    }

    @Test func aRequestHeadIsReadWithItsQueryAndFields() throws {
        let head = try #require(
            HTTPRequestHead(
                parsing: Array(
                    "GET /app.js?token=a%2Db&x HTTP/1.1\r\nHost: 127.0.0.1:80\r\nCookie: a=1\r\ncookie:  b=2 ".utf8)))
        #expect(head.method == "GET" && head.path == "/app.js")
        #expect(head.queryValue("token") == "a-b" && head.queryValue("x") == "")
        #expect(head.field("host") == "127.0.0.1:80" && head.fields("cookie") == ["a=1", "b=2"])
        #expect(HTTPRequestHead(parsing: Array("GET app.js HTTP/1.1".utf8)) == nil, "a target that is no path")
        #expect(HTTPRequestHead(parsing: Array("GET / HTTP/1.1\r\nNo colon here".utf8)) == nil)
        #expect(HTTPRequestHead(parsing: Array("GET / SPDY/3".utf8)) == nil)
    }
}
