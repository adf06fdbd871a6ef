import ControlProtocol
import Foundation
import LocalIO
import Testing

@testable import Emulation

/// Control lines as a client's bytes arrive: split anywhere, CRLF or LF, too long.
struct LineFramerTests {
    @Test func linesSplitAcrossReadsComeOutWholeAndCRLFIsOneEnding() {
        var framer = LineFramer(maximumLength: 64)
        #expect(framer.append(Array("{\"a\":".utf8)[...]).isEmpty)
        #expect(
            framer.append(Array("1}\r\n{\"b\":2}\n\r\n".utf8)[...]) == [
                .line("{\"a\":1}"), .line("{\"b\":2}"), .line(""),
            ])
    }

    @Test func aLineOverTheMaximumIsReportedOnceAndItsRestDropped() {
        var framer = LineFramer(maximumLength: 8)
        #expect(framer.append(Array("0123456789".utf8)[...]) == [.tooLong])
        #expect(framer.append(Array("abcdef".utf8)[...]).isEmpty)
        #expect(framer.append(Array("xyz\nok\n".utf8)[...]) == [.line("ok")])
        #expect(framer.append(Array("012345678\nfine\n".utf8)[...]) == [.tooLong, .line("fine")])
        #expect(framer.append(Array("12345678\n".utf8)[...]) == [.line("12345678")])
    }
}

/// The control socket answers every line exactly once, however long or blank (README.md, "Reliability").
@Suite(.serialized) struct ControlLineTests {
    /// Sends `bytes` on one connection and reads `count` answer lines.
    private func exchange(_ path: String, _ bytes: [UInt8], answers count: Int) throws -> [String] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        try #require(SocketCalls.connect(fd, to: try #require(SocketCalls.unixAddress(path))))
        // A server that fails to answer a line must fail the test, not hang it.
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            try #require(result > 0)
            sent += result
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.filter({ $0 == UInt8(ascii: "\n") }).count < count {
            let result = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard result > 0 else { break }
            received += buffer[..<result]
        }
        return String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func aLineOverTheMaximumGetsOneErrorAndTheConnectionServesOn() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        let server = ControlServer(path: try temporaryDirectory() + "/l.sock", emulator: rig.emulator)
        try server.start()
        defer { server.stop() }
        let huge = [UInt8](repeating: UInt8(ascii: "x"), count: 2 * ControlServer.maximumLineLength)
        let path = server.path
        let bytes = huge + Array("\n{\"command\":\"counters\"}\n".utf8)
        let answers = try await offPool { try self.exchange(path, bytes, answers: 2) }
        #expect(answers.count == 2, "\(answers.map { $0.prefix(80) })")
        #expect(object(answers.first ?? "")["ok"] as? Bool == false)
        #expect((object(answers.first ?? "")["error"] as? String)?.contains("longer than") == true)
        #expect(object(answers.last ?? "")["ok"] as? Bool == true)
    }

    @Test func aBlankOrBareCarriageReturnLineIsAnsweredToo() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        let server = ControlServer(path: try temporaryDirectory() + "/b.sock", emulator: rig.emulator)
        try server.start()
        defer { server.stop() }
        let path = server.path
        let bytes = Array("\r\n\n{\"command\":\"counters\"}\r\n".utf8)
        let answers = try await offPool { try self.exchange(path, bytes, answers: 3) }
        #expect(answers.map { object($0)["ok"] as? Bool } == [false, false, true])
    }
}
