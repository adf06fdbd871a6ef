import Foundation
import LocalIO

/// A process of our own (the built `blemu`), its output in files. Spawned with `ProcessSpawn` (the stop signals at
/// their defaults and none blocked, none of the test process's descriptors, in the run's process group so that a
/// Ctrl-C of the run ends it too) and reaped by waitpid on a thread of its own:
/// Foundation's Process can hang waiting from Swift concurrency's threads on Linux, and a blocking wait on the
/// cooperative pool (two threads here) would starve the tests.
final class ChildProcess: Sendable {
    /// The process id.
    let pid: pid_t
    /// Where its stdout and stderr go.
    let stdoutPath: String
    let stderrPath: String

    /// The built blemu, next to the test bundle (`swift build --build-tests` builds every product).
    static let blemu = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("blemu").path

    /// The checkout's root, found from this file.
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// Starts `executable` with `arguments`, stdout and stderr to files in `directory`; throws when it cannot start.
    init(_ executable: String, _ arguments: [String], outputIn directory: String) throws {
        stdoutPath = directory + "/stdout.txt"
        stderrPath = directory + "/stderr.txt"
        let output = open(stdoutPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let errors = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer {
            close(output)
            close(errors)
        }
        guard output >= 0, errors >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        pid = try ProcessSpawn.start(
            [executable] + arguments, standardOutput: .descriptor(output), standardError: .descriptor(errors),
            ownGroup: false
        ).get()
    }

    /// What it printed on stdout so far.
    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    /// What it printed on stderr so far.
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Sends a signal.
    func signal(_ number: Int32) { kill(pid, number) }

    /// Waits for the exit, off the cooperative pool: the exit status, or 128 + the signal that killed it.
    func exitStatus() async -> Int32 {
        let pid = pid
        return await withCheckedContinuation { continuation in
            Thread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                let signal = status & 0x7F
                continuation.resume(returning: signal == 0 ? (status >> 8) & 0xFF : 128 + signal)
            }.start()
        }
    }
}

/// Runs blocking work (a control socket round trip) on a thread of its own, never on the cooperative pool.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
