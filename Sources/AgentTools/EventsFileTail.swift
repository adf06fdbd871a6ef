import Foundation

/// The end of an event log (`blemu run --events FILE`): its last whole lines, read from a window at the file's end
/// so a log grown to gigabytes in a soak costs no more than a fresh one.
enum EventsFileTail {
    /// The most bytes read from the end: 256 lines of the longest kind (a 512-byte value written, in hex) fit.
    static let window: UInt64 = 4 << 20

    /// The last `count` whole lines of the file at `path` (a line still being written is left out).
    static func lines(of path: String, last count: Int) throws(ToolError) -> [String] {
        do {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw ToolError("events", "cannot read the event log \(path)")
            }
            defer { try? handle.close() }
            let size = try handle.seekToEnd()
            let start = size > window ? size - window : 0
            try handle.seek(toOffset: start)
            var bytes = try handle.readToEnd() ?? Data()
            // Only whole lines: up to the last newline, and from the first one when the window starts mid-line.
            guard let last = bytes.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
            bytes = bytes[..<last]
            if start > 0, let first = bytes.firstIndex(of: UInt8(ascii: "\n")) { bytes = bytes[(first + 1)...] }
            let lines = bytes.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
            return Array(lines.suffix(count))
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("events", "cannot read the event log \(path): \(error.localizedDescription)")
        }
    }
}
