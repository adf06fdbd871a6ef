import ControlProtocol
import LocalIO

/// The end of a device's event log file (`blemu run --events FILE`): a page opened late sees more history than the
/// control socket's latest 256 events.
enum EventLogTail {
    /// The last `count` lines of `path` that parse as JSON objects, oldest first, from a bounded window at its end
    /// (`LocalFile.lastLines`); nil when there is no path or it is not a readable regular file (the caller uses the
    /// socket's events then).
    static func read(_ path: String?, last count: Int) -> [JSONValue]? {
        guard let path, let lines = try? LocalFile.lastLines(atPath: path, count: count) else { return nil }
        return lines.compactMap { line in (try? JSONValue(parsing: line)).flatMap { $0.object == nil ? nil : $0 } }
    }
}
