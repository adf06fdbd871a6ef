import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// RootCanal's output on its way to the results directory, without the line every controller logs for each packet
/// it hears addressed to another ("Dropping ... packet not addressed to me", a debug line in
/// model/controller/le_controller.cc and bredr_controller.cc that RootCanal 1.13.0 has no flag to turn off). With N
/// controllers each packet on the air makes N - 1 of them: in a 60-device fleet's run of 30 minutes, 7.8 million
/// lines, 1.4 GB of the log's 1.42. What RootCanal says about itself and the packets it delivers stays, and the log
/// ends with how many lines were left out.
///
/// RootCanal writes into a pipe; one thread copies what it keeps to the file until the pipe closes.
final class RootCanalLog: Sendable {
    /// The part of a line that marks it as one to leave out.
    static let leftOut = Array("packet not addressed to me".utf8)

    /// The pipe's end for RootCanal's standard output and error; `closeWriteEnd` closes this process's copy.
    let writeEnd: Int32
    /// The thread copying the pipe to the file, until RootCanal's exit closes the pipe.
    private let copying: ThreadJob<Void>

    /// A log into a new file at `path`; throws the reason when the pipe or the file cannot be made.
    init(path: String) throws(RootCanalAir.Failure) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw RootCanalAir.Failure(reason: "pipe for RootCanal's log: \(String(cString: strerror(errno)))")
        }
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard file >= 0 else {
            let reason = String(cString: strerror(errno))
            fds.forEach { close($0) }
            throw RootCanalAir.Failure(reason: "cannot create \(path): \(reason)")
        }
        // Only RootCanal's copy of the write end may stay open once it runs (dup2 onto its stdout clears the flag
        // there), so the read end ends with its exit; the VMs started later must not inherit either end.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        writeEnd = fds[1]
        let readEnd = fds[0]
        do {
            copying = try ThreadJob { Self.copy(from: readEnd, to: file) }
        } catch {
            fds.forEach { close($0) }
            close(file)
            throw RootCanalAir.Failure(reason: "RootCanal's log: \(error)")
        }
    }

    /// Closes this process's copy of the write end: call once RootCanal has its own (or will never start).
    func closeWriteEnd() { close(writeEnd) }

    /// Waits up to `timeout` for RootCanal's last line (its exit closes the pipe) and closes the file.
    func finish(timeout: Duration = .seconds(2)) { copying.wait(within: timeout) }

    /// Whether `line` (without its newline) is kept.
    static func keeps(_ line: ArraySlice<UInt8>) -> Bool { line.firstRange(of: leftOut) == nil }

    private static func copy(from readEnd: Int32, to file: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var pending: [UInt8] = []
        var omitted = 0
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending += buffer[..<count]
            var kept: [UInt8] = []
            var lineStart = pending.startIndex
            while let newline = pending[lineStart...].firstIndex(of: 10) {
                let line = pending[lineStart..<newline]
                if Self.keeps(line) { kept += pending[lineStart...newline] } else { omitted += 1 }
                lineStart = newline + 1
            }
            pending.removeSubrange(..<lineStart)
            write(kept, to: file)
        }
        if !pending.isEmpty && Self.keeps(pending[...]) { write(pending + [10], to: file) }
        if omitted > 0 {
            let note =
                "blemu: left out \(omitted) lines \"... packet not addressed to me\""
                + " (docs/lab.md, \"RootCanal's air\")\n"
            write(Array(note.utf8), to: file)
        }
        close(readEnd)
        close(file)
    }

    /// Writes all of `bytes`; a full disk loses the log's rest, never RootCanal's progress (the pipe keeps draining).
    private static func write(_ bytes: [UInt8], to file: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
