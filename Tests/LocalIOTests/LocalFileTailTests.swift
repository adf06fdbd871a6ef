import Foundation
import LocalIO
import Testing

/// `LocalFile.lastLines`: the end of an event log as its readers need it, whole lines only, from a bounded window,
/// and never a blocking read of something that is not a file.
@Suite struct LocalFileTailTests {
    private func scratch(_ name: String) throws -> String {
        let directory = NSTemporaryDirectory() + "blemu-tail-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory + "/" + name
    }

    @Test func theLastWholeLinesComeOldestFirstAndALineBeingWrittenIsLeftOut() throws {
        let path = try scratch("events.jsonl")
        try "one\ntwo\nthree\nfour\nfi".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try LocalFile.lastLines(atPath: path, count: 2) == ["three", "four"])
        #expect(try LocalFile.lastLines(atPath: path, count: 10) == ["one", "two", "three", "four"])
    }

    @Test func aWindowThatStartsMidLineKeepsOnlyTheWholeLinesAfterIt() throws {
        let path = try scratch("long.jsonl")
        // 1000 lines of 10 bytes; a 25-byte window holds the end of line 998 (dropped), 999 and 1000.
        let lines = (1...1000).map { String(format: "line %04d", $0) }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try LocalFile.lastLines(atPath: path, count: 100, window: 25) == ["line 0999", "line 1000"])
        #expect(try LocalFile.lastLines(atPath: path, count: 100, window: 5) == [])
    }

    @Test func aFIFOIsRefusedAtOnceRatherThanReadAndAMissingFileNamesItsPath() throws {
        let fifo = try scratch("pipe")
        try #require(mkfifo(fifo, 0o600) == 0)
        // No writer: an ordinary open would wait for one, so this returning at all is half the check.
        #expect {
            try LocalFile.lastLines(atPath: fifo, count: 5)
        } throws: { error in
            "\(error)" == "\(fifo): not a regular file"
        }
        let missing = fifo + "-missing"
        #expect {
            try LocalFile.lastLines(atPath: missing, count: 5)
        } throws: { error in
            "\(error)" == "\(missing): No such file or directory"
        }
    }
}
