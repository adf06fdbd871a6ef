import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lines for a person, written at once (unbuffered) with write(2): a script waiting for a line sees it, and a reader
/// that went away costs the line, never the device (SIGPIPE is ignored while serving).
public enum Console {
    /// Writes `text` and a newline to stderr.
    public static func error(_ text: String) { line(text, to: STDERR_FILENO) }

    /// Writes `text` and a newline to `descriptor`; a failed write is ignored.
    public static func line(_ text: String, to descriptor: Int32) { write(text + "\n", to: descriptor) }

    /// Writes `text` as it is to `descriptor` (stderr when not given); a failed write is ignored.
    public static func write(_ text: String, to descriptor: Int32 = STDERR_FILENO) {
        try? LocalFile.writeAll(Array(text.utf8), to: descriptor)
    }
}
