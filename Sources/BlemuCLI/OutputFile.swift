import ArgumentParser
import LocalIO
import Serving

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files the commands write (`clone`'s profile, recordings and report, `verify --junit`): whole or not at all.
enum OutputFile {
    /// Writes `text` next to `path` and renames it into place, so the file appears whole or not at all;
    /// `cannotCreate` after saying why.
    static func write(_ text: String, to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        func fail(_ reason: String) -> ExitCode {
            unlink(temporary)
            Console.error("blemu: cannot write \(path): \(reason)")
            return ExitCode.cannotCreate
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw fail(String(cString: strerror(errno))) }
        do { try LocalFile.writeAll(Array(text.utf8), to: fd) } catch {
            close(fd)
            throw fail(error.description)
        }
        // close(2) can report what a write-back found (a full disk on NFS): the file is whole only if it succeeds.
        guard close(fd) == 0, rename(temporary, path) == 0 else { throw fail(String(cString: strerror(errno))) }
    }
}
