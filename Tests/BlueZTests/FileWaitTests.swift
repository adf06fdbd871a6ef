import Foundation
import Testing

struct FileWaitTests {
    /// A file created and appended to after the wait began wakes it; text that never comes times out.
    @Test func aWaitSeesTextWrittenLaterAndGivesUpOnTextThatNeverComes() async throws {
        let directory = NSTemporaryDirectory() + "filewait-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/out.txt"
        Thread {
            Thread.sleep(forTimeInterval: 0.2)  // another process, writing later
            _ = FileManager.default.createFile(atPath: path, contents: Data("starting\n".utf8))
            Thread.sleep(forTimeInterval: 0.2)  // another process, writing later
            let handle = FileHandle(forWritingAtPath: path)
            _ = try? handle?.seekToEnd()
            try? handle?.write(contentsOf: Data("advertising \"x\"\n".utf8))
            try? handle?.close()
        }.start()
        #expect(await FileWait.until(path, contains: "advertising", within: .seconds(10)))
        #expect(!(await FileWait.until(path, contains: "stopped", within: .milliseconds(300))))
    }
}
