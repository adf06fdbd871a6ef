import Foundation
import Testing

@testable import Lab

/// How `lab run` streams COMMAND's output: only what was appended, from the start again after a fresh boot.
struct FileFollowerTests {
    @Test func eachCallReturnsOnlyWhatWasAppendedSinceTheLast() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("follow-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var follower = FileFollower(path: path)
        #expect(follower.next().isEmpty)  // not there yet
        try "Ran 1 test".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(follower.next() == Data("Ran 1 test".utf8))
        #expect(follower.next().isEmpty)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\nOK\n".utf8))
        try handle.close()
        #expect(follower.next() == Data("\nOK\n".utf8))
        try "new".write(toFile: path, atomically: false, encoding: .utf8)  // a fresh boot's shorter file
        #expect(follower.next() == Data("new".utf8))
    }
}
