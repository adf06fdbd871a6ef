import Foundation
import LocalIO
import Testing

/// The small text and file calls the CLI and the lab use instead of swift-corelibs-foundation's: C's formatting,
/// trimming, an appending write and a read at an offset.
@Suite struct TextAndFileTests {
    @Test func cFormatIsWhatPrintfWrites() {
        #expect(String(cFormat: "%.1f s", 12.345) == "12.3 s")
        #expect(String(cFormat: "%02X:%02X", UInt8(0x0a), UInt8(0xff)) == "0A:FF")
        #expect(String(cFormat: "%.2f °C", 21.5) == "21.50 °C")
        #expect(String(cFormat: "%.6g", 1.0 / 3) == "0.333333")
        #expect(String(cFormat: "%04d-%02d", Int32(7), Int32(3)) == "0007-03")
        #expect(String(cFormat: "") == "")
        // Longer than any first guess at a buffer.
        #expect(String(cFormat: "%0300d", Int32(1)).count == 300)
    }

    @Test func trimmingTakesWhitespaceAndLineEndsFromBothEndsOnly() {
        #expect(" \t 5.82 \n".trimmingWhitespace() == "5.82")
        #expect("a b\r\n".trimmingWhitespace() == "a b")
        #expect(" \n ".trimmingWhitespace() == "")
        #expect("x"[...].trimmingWhitespace() == "x")
    }

    @Test func appendAddsToTheEndAndCreatesOnlyWhenAsked() throws {
        let path = NSTemporaryDirectory() + "blemu-append-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: LocalFile.WriteError.self) {
            try LocalFile.append(Array("a".utf8), toPath: path, creating: false)
        }
        try LocalFile.append(Array("one\n".utf8), toPath: path)
        try LocalFile.append(Array("two\n".utf8), toPath: path, creating: false)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "one\ntwo\n")
    }

    @Test func aReadAtAnOffsetGivesWhatIsThereAndTheSize() throws {
        let path = NSTemporaryDirectory() + "blemu-offset-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "0123456789".write(toFile: path, atomically: true, encoding: .utf8)
        let middle = try LocalFile.bytes(atPath: path, from: 3, upTo: 4)
        #expect(String(decoding: middle.bytes, as: UTF8.self) == "3456" && middle.fileSize == 10)
        #expect(try LocalFile.bytes(atPath: path, from: 8, upTo: 100).bytes == Array("89".utf8))
        #expect(try LocalFile.bytes(atPath: path, from: 20, upTo: 5).bytes.isEmpty)
        #expect(try LocalFile.bytes(atPath: path, from: -4, upTo: 5).bytes.isEmpty)
        #expect(throws: LocalFile.ReadError.self) { try LocalFile.bytes(atPath: path + ".missing", from: 0, upTo: 1) }
    }
}
