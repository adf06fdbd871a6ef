import Testing

@testable import LiveView

/// A page's frames: its outbox is bounded and closes a page that falls behind, and its messages are read whole with
/// the control frames answered as RFC 6455 section 5.5 asks.
@Suite struct PageSocketTests {
    private func text(_ string: String, fin: Bool = true, continuation: Bool = false) -> WebSocketFrame {
        WebSocketFrame(fin: fin, opcode: continuation ? .continuation : .text, payload: Array(string.utf8))
    }

    @Test func aPageThatStopsReadingIsClosedOnceItFallsTheBacklogBehind() {
        let outbox = PageOutbox(capacity: DeviceWatcher.pageBacklog)
        let queued = (0..<DeviceWatcher.pageBacklog).filter { outbox.send("{\"n\":\($0)}") == .queued }.count
        #expect(queued == DeviceWatcher.pageBacklog)
        #expect(outbox.send("{\"n\":\"one too many\"}") == .behind)
        // What was queued is still written, in order, then the page's frames end: its connection closes.
        var read = 0
        var last = ""
        while let frame = outbox.next() {
            read += 1
            last = String(decoding: frame.payload, as: UTF8.self)
        }
        #expect(read == DeviceWatcher.pageBacklog && last == "{\"n\":\(DeviceWatcher.pageBacklog - 1)}")
        #expect(outbox.next() == nil, "the end is seen again")
        #expect(outbox.send("{}") == .gone)
    }

    @Test func aWriterWaitingOnAnEmptyOutboxWakesForAFrameAndForTheClose() async {
        let outbox = PageOutbox(capacity: 4)
        let writer = Task.detached { () -> [String] in
            var texts: [String] = []
            while let frame = outbox.next() { texts.append(String(decoding: frame.payload, as: UTF8.self)) }
            return texts
        }
        outbox.send("one")
        outbox.send("two")
        outbox.close()
        #expect(await writer.value == ["one", "two"])
    }

    @Test func nothingFollowsTheCloseFrame() {
        let outbox = PageOutbox(capacity: 4)
        #expect(outbox.send(.close(code: 1000), last: true) == .queued)
        #expect(outbox.send("a late event") == .gone, "RFC 6455 section 5.5.1: no data after a Close")
        #expect(outbox.next()?.opcode == .close)
        #expect(outbox.next() == nil)
    }

    @Test func aMessageThatIsNotUTF8ClosesWith1007() {
        var reader = PageMessageReader(longest: 64)
        #expect(
            reader.take(WebSocketFrame(fin: true, opcode: .text, payload: [0x7B, 0xC3, 0x28]))
                == .close(.close(code: 1007)))
    }

    @Test func aCloseIsAnsweredWithItsCodeOnlyWhenAPeerMaySendIt() {
        var reader = PageMessageReader(longest: 64)
        func answer(_ payload: [UInt8]) -> PageMessageReader.Outcome {
            reader.take(WebSocketFrame(fin: true, opcode: .close, payload: payload))
        }
        #expect(answer([]) == .close(WebSocketFrame(fin: true, opcode: .close, payload: [])))
        #expect(answer([0x0F, 0xA0]) == .close(WebSocketFrame(fin: true, opcode: .close, payload: [0x0F, 0xA0])))
        for invalid: [UInt8] in [[0x03], [0x03, 0xED], [0x03, 0xEE], [0x03, 0xF7], [0x00, 0x10]] {
            #expect(answer(invalid) == .close(.close(code: 1002)), "\(invalid)")
        }
    }

    @Test func fragmentsMakeOneMessageAndAPingIsAnsweredWithItsPayload() {
        var reader = PageMessageReader(longest: 64)
        #expect(reader.take(text("{\"type\":", fin: false)) == .none)
        #expect(reader.take(text("\"command\"", fin: false, continuation: true)) == .none)
        #expect(reader.take(text("}", continuation: true)) == .message("{\"type\":\"command\"}"))
        let ping = WebSocketFrame(fin: true, opcode: .ping, payload: [1, 2, 3])
        #expect(reader.take(ping) == .reply(WebSocketFrame(fin: true, opcode: .pong, payload: [1, 2, 3])))
        #expect(reader.take(WebSocketFrame(fin: true, opcode: .pong, payload: [])) == .none)
    }

    @Test func aCloseIsEchoedAndTooLongStrayOrBinaryMessagesCloseThePage() {
        var reader = PageMessageReader(longest: 8)
        let close = WebSocketFrame(fin: true, opcode: .close, payload: [0x03, 0xE8, 0x62, 0x79, 0x65])
        #expect(reader.take(close) == .close(WebSocketFrame(fin: true, opcode: .close, payload: [0x03, 0xE8])))
        #expect(reader.take(text("12345", fin: false)) == .none)
        #expect(reader.take(text("6789", continuation: true)) == .close(.close(code: 1009, reason: "Message Too Big")))
        #expect(reader.take(text("x", continuation: true)) == .close(.close(code: 1002)))
        #expect(reader.take(WebSocketFrame(fin: true, opcode: .binary, payload: [0])) == .close(.close(code: 1003)))
    }
}
