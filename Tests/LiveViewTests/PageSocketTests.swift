import FlyingFox
import Foundation
import Testing

@testable import LiveView

/// A page's frames: its outbox is bounded and closes a page that falls behind, and its messages are read whole with
/// the control frames answered as RFC 6455 section 5.5 asks.
@Suite struct PageSocketTests {
    private func text(_ string: String, fin: Bool = true, continuation: Bool = false) -> WSFrame {
        WSFrame(fin: fin, opcode: continuation ? .continuation : .text, mask: nil, payload: Data(string.utf8))
    }

    @Test func aPageThatStopsReadingIsClosedOnceItFallsTheBacklogBehind() async {
        let (frames, continuation) = AsyncStream.makeStream(
            of: WSFrame.self, bufferingPolicy: .bufferingOldest(DeviceWatcher.pageBacklog))
        let outbox = PageOutbox(continuation: continuation)
        let queued = (0..<DeviceWatcher.pageBacklog).filter { outbox.send("{\"n\":\($0)}") == .queued }.count
        #expect(queued == DeviceWatcher.pageBacklog)
        #expect(outbox.send("{\"n\":\"one too many\"}") == .behind)
        // What was queued is still written, in order, then the page's frames end: its connection closes.
        var read = 0
        var last = ""
        for await frame in frames {
            read += 1
            last = String(decoding: frame.payload, as: UTF8.self)
        }
        #expect(read == DeviceWatcher.pageBacklog && last == "{\"n\":\(DeviceWatcher.pageBacklog - 1)}")
        #expect(outbox.send("{}") == .gone)
    }

    @Test func fragmentsMakeOneMessageAndAPingIsAnsweredWithItsPayload() {
        var reader = PageMessageReader(longest: 64)
        #expect(reader.take(text("{\"type\":", fin: false)) == .none)
        #expect(reader.take(text("\"command\"", fin: false, continuation: true)) == .none)
        #expect(reader.take(text("}", continuation: true)) == .message("{\"type\":\"command\"}"))
        let ping = WSFrame(fin: true, opcode: .ping, mask: nil, payload: Data([1, 2, 3]))
        #expect(reader.take(ping) == .reply(WSFrame(fin: true, opcode: .pong, mask: nil, payload: Data([1, 2, 3]))))
        #expect(reader.take(WSFrame(fin: true, opcode: .pong, mask: nil, payload: Data())) == .none)
    }

    @Test func aCloseIsEchoedAndTooLongStrayOrBinaryMessagesCloseThePage() {
        var reader = PageMessageReader(longest: 8)
        let close = WSFrame(fin: true, opcode: .close, mask: nil, payload: Data([0x03, 0xE8, 0x62, 0x79, 0x65]))
        #expect(
            reader.take(close) == .close(WSFrame(fin: true, opcode: .close, mask: nil, payload: Data([0x03, 0xE8]))))
        #expect(reader.take(text("12345", fin: false)) == .none)
        #expect(
            reader.take(text("6789", continuation: true))
                == .close(.close(code: WSCloseCode(1009, reason: "Message Too Big"))))
        #expect(reader.take(text("x", continuation: true)) == .close(.close(code: .protocolError)))
        #expect(
            reader.take(WSFrame(fin: true, opcode: .binary, mask: nil, payload: Data([0])))
                == .close(.close(code: .unsupportedData)))
    }
}
