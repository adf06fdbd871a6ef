import Emulation
import LocalIO

/// The end of a device's event log file (`blemu run --events FILE`): a page opened late sees more history than the
/// control socket's latest 256 events.
enum EventLogTail {
    /// The last `count` lines of `path` that parse as JSON objects, oldest first; nil when there is no path or the
    /// file cannot be read (the caller uses the socket's events then).
    static func read(_ path: String?, last count: Int) -> [JSONValue]? {
        guard let path, let bytes = try? LocalFile.bytes(atPath: path) else { return nil }
        var lines: [JSONValue] = []
        // From the end backwards, so a long log costs only the lines kept.
        var end = bytes.endIndex
        while end > bytes.startIndex && lines.count < count {
            let start = bytes[..<end].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? bytes.startIndex
            if start < end, let event = try? JSONValue(parsing: String(decoding: bytes[start..<end], as: UTF8.self)),
                event.object != nil
            {
                lines.append(event)
            }
            end = start > bytes.startIndex ? start - 1 : bytes.startIndex
        }
        return lines.reversed()
    }
}
