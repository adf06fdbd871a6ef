#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a whole local file and writes whole buffers with POSIX calls: the one file read the profile loader, replay
/// tracks and state files share, and the one write loop of the event log, state files and console lines, so nothing
/// on the serving path links Foundation (linking it costs ~5 MiB of every process).
public enum LocalFile {
    /// Why a file could not be read: the path and the system's reason (`strerror`).
    public struct ReadError: Error, Hashable, Sendable, CustomStringConvertible {
        /// `path: reason`, as a one-line message.
        public var description: String
    }

    /// The file's bytes. Throws for a missing or unreadable file, a directory, or a read error midway.
    public static func bytes(atPath path: String) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure(path) }
        defer { _ = close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            // read() of a directory fails with EISDIR: the same message a user gets from cat.
            guard count >= 0 else { throw failure(path) }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
        }
    }

    /// The directory part and the last component of a path (`.` for a bare name, `/` for one at the root), as
    /// `dirname` and `basename` would give them.
    public static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// Why bytes could not all be written: the system's reason (`strerror`), or "nothing written".
    public struct WriteError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The reason, as a one-line message.
        public var description: String
    }

    /// Writes all of `bytes` to `descriptor`, again after EINTR and after a short write. Throws at the first write
    /// that fails (EPIPE when the reader went away: SIGPIPE must be ignored for that to come back) or writes nothing.
    /// A descriptor someone made non-blocking answers EAGAIN when its reader is behind: with `waitingWhenFull` the
    /// write waits until it takes more (a protocol's answer must not be lost), else it fails (a device's log line
    /// must not stall the device).
    public static func writeAll(
        _ bytes: [UInt8], to descriptor: Int32, waitingWhenFull: Bool = false
    ) throws(WriteError) {
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result < 0 && errno == EINTR { continue }
            if result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && waitingWhenFull {
                var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&ready, 1, -1)
                continue
            }
            guard result > 0 else {
                throw WriteError(description: result < 0 ? String(cString: strerror(errno)) : "nothing written")
            }
            written += result
        }
    }

    /// Whether the file exists and this process may read it (`access(2)`, R_OK).
    public static func isReadable(_ path: String) -> Bool { access(path, R_OK) == 0 }

    static func failure(_ path: String) -> ReadError {
        ReadError(description: "\(path): \(String(cString: strerror(errno)))")
    }
}

extension LocalFile {
    /// Appends all of `bytes` to the file at `path`, created (mode 0644) when missing and `creating`. O_APPEND puts
    /// each write at the end as the file is then, so lines from several writers never overwrite one another.
    public static func append(_ bytes: [UInt8], toPath path: String, creating: Bool = true) throws(WriteError) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | (creating ? O_CREAT : 0), 0o644)
        guard fd >= 0 else { throw WriteError(description: "\(path): \(String(cString: strerror(errno)))") }
        defer { _ = close(fd) }
        try writeAll(bytes, to: fd)
    }

    /// Up to `limit` bytes of the file from `offset`, and the file's size then: a follower's next chunk of a file
    /// another process appends to, or a header. Fewer bytes at the end of the file; none from beyond it, nor from a
    /// negative offset.
    public static func bytes(
        atPath path: String, from offset: Int, upTo limit: Int
    ) throws(ReadError) -> (bytes: [UInt8], fileSize: Int) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure(path) }
        defer { _ = close(fd) }
        var information = stat()
        guard fstat(fd, &information) == 0 else { throw failure(path) }
        let size = Int(information.st_size)
        let wanted = offset < 0 || offset > size ? 0 : min(limit, size - offset)
        var bytes = [UInt8](repeating: 0, count: wanted)
        var done = 0
        while done < wanted {
            let count = bytes[done...].withUnsafeMutableBytes {
                pread(fd, $0.baseAddress, $0.count, off_t(offset + done))
            }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw failure(path) }
            if count == 0 { break }
            done += count
        }
        return (Array(bytes.prefix(done)), size)
    }
}
