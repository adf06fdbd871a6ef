#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LocalFile {
    /// The most bytes `lastLines` reads from the end of a file: 256 lines of the longest event (a 512-byte value
    /// written, in hex) fit many times over.
    public static let tailWindow = 4 << 20

    /// The last `count` whole lines of the regular file at `path`, oldest first, from at most `window` bytes at its
    /// end, so a log grown to gigabytes in a soak costs no more than a fresh one; a line still being written (no
    /// newline yet) is left out. Throws for a missing or unreadable file, and for one that is not a regular file: a
    /// FIFO or a terminal (`--events /dev/stdout`) would block the reader, or take lines meant for another.
    public static func lastLines(
        atPath path: String, count: Int, window: Int = tailWindow
    ) throws(ReadError) -> [String] {
        // O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one before fstat could refuse it.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw failure(path) }
        defer { _ = close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw failure(path) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw ReadError(description: "\(path): not a regular file")
        }
        let start = max(0, Int(status.st_size) - window)
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size) - start)
        var filled = 0
        while filled < bytes.count {
            let result = bytes[filled...].withUnsafeMutableBytes {
                pread(fd, $0.baseAddress, $0.count, off_t(start + filled))
            }
            if result < 0 && errno == EINTR { continue }
            guard result >= 0 else { throw failure(path) }
            if result == 0 { break }  // truncated since fstat
            filled += result
        }
        let newline = UInt8(ascii: "\n")
        guard let last = bytes[..<filled].lastIndex(of: newline) else { return [] }
        var whole = bytes[..<last]
        // A window that starts mid-line: that first part is not a whole line.
        if start > 0 {
            guard let first = whole.firstIndex(of: newline) else { return [] }
            whole = whole[(first + 1)...]
        }
        return whole.split(separator: newline).suffix(count).map { String(decoding: $0, as: UTF8.self) }
    }
}
