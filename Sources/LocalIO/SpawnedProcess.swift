import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child started by `ProcessSpawn` and reaped here: whether it runs, its exit status, signals that can only reach
/// it. The lab's children (qemu, RootCanal, a tool's `--version`) are watched so, where Foundation's `Process` did.
public final class SpawnedProcess: Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// The child's status as a shell reports it, once reaped. Reaping happens under this lock only, and so do the
    /// signals: until the status is set the pid is unreaped, so it is still this child's, never a reused one.
    private let reaped = Mutex<Int32?>(nil)

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `arguments` (the executable's path first) as `ProcessSpawn.start` does.
    public static func start(
        _ arguments: [String], environment: [String: String] = [:],
        standardOutput: ProcessSpawn.Output = .inherited, standardError: ProcessSpawn.Output = .inherited
    ) throws(ProcessSpawn.SpawnError) -> SpawnedProcess {
        let result = ProcessSpawn.start(
            arguments, environment: environment, standardOutput: standardOutput, standardError: standardError)
        return SpawnedProcess(pid: try result.get())
    }

    /// Runs `arguments` to its end and returns its status (as a shell gives it) and what it wrote to stdout, at most
    /// `limit` bytes; its stderr goes where `standardError` says. The output is read before the wait: a child that
    /// fills the pipe would otherwise never exit; past the limit the pipe is closed, so such a child gets EPIPE (or
    /// SIGPIPE) instead of waiting for a reader.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], standardError: ProcessSpawn.Output = .discarded,
        readingAtMost limit: Int = .max
    ) throws(ProcessSpawn.SpawnError) -> (status: Int32, output: [UInt8]) {
        var ends: [Int32] = [-1, -1]
        // pipe2 is not in Glibc's Swift overlay; a child spawned between the two calls closes the ends itself
        // (ProcessSpawn's close-from action).
        guard pipe(&ends) == 0 else { throw ProcessSpawn.SpawnError(description: String(cString: strerror(errno))) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let child: SpawnedProcess
        do {
            child = try start(
                arguments, environment: environment, standardOutput: .descriptor(ends[1]),
                standardError: standardError)
        } catch {
            _ = close(ends[0])
            _ = close(ends[1])
            throw error
        }
        _ = close(ends[1])
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while output.count < limit {
            let wanted = min(chunk.count, limit - output.count)
            let count = chunk.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, wanted) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            output += chunk[..<count]
        }
        _ = close(ends[0])
        return (child.wait(), output)
    }

    /// Whether the child has not exited yet (it is reaped here when it has).
    public var isRunning: Bool { reapIfExited() == nil }

    /// The exit status as a shell gives it (128 + the signal when one killed it), or nil while the child runs.
    public var status: Int32? { reapIfExited() }

    /// Blocks until the child exits and returns its status as a shell gives it.
    @discardableResult
    public func wait() -> Int32 {
        if let status = reapIfExited() { return status }
        // Waits without reaping, so that only `reapIfExited` reaps, under the lock the signals take.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        return reapIfExited() ?? 127
    }

    /// Sends `number` to the child alone, or with `group` to its whole process group, unless the child has been
    /// reaped. Every child starts as the leader of a group of its own (`ProcessSpawn.start`), so the group is what
    /// it started too; while the leader is unreaped, its group's id cannot name anyone else's.
    public func signal(_ number: Int32, group: Bool = false) {
        reaped.withLock { status in
            if status == nil { _ = kill(group ? -pid : pid, number) }
        }
    }

    /// Blocks until the child exits or `limit` has passed; returns its status, or nil when it still runs. A thread of
    /// its own waits for the exit without reaping it, so this is an event with a deadline, not a poll; when the limit
    /// passes first that thread waits on and ends with the child.
    public func wait(within limit: Duration) -> Int32? {
        if let status = reapIfExited() { return status }
        let exited = DispatchSemaphore(value: 0)
        do { try onExit { exited.signal() } } catch {
            // No thread to spare (the process's limit): the child loses its time, not its reaping.
            return reapIfExited()
        }
        guard exited.wait(timeout: .after(limit)) == .success else { return nil }
        return reapIfExited()
    }

    /// Calls `body` on a thread of its own once the child has exited (at once when it has), without reaping it: an
    /// event for a thread that watches several children and more, where a poll of `isRunning` would be its only
    /// other way. Throws when the process may start no more threads.
    package func onExit(_ body: @escaping @Sendable () -> Void) throws(DetachedThread.StartError) {
        try DetachedThread.start { [pid] in
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
            body()
        }
    }

    /// SIGTERM to the child, then up to `grace` for it to exit, then SIGKILL to its whole group, so nothing it
    /// started outlives it (a `timeout` cannot pass a SIGKILL on to its qemu); returns once the child is reaped,
    /// with its status.
    @discardableResult
    public func stop(grace: Duration) -> Int32 {
        signal(SIGTERM)
        if let status = wait(within: grace) { return status }
        signal(SIGKILL, group: true)
        return wait()
    }

    private func reapIfExited() -> Int32? {
        reaped.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &raw, WNOHANG) } while result < 0 && errno == EINTR
            // ECHILD: someone else reaped it (a SIGCHLD set to SIG_IGN); its status is lost, so say so as a shell does.
            guard result == pid || (result < 0 && errno == ECHILD) else { return nil }
            let value: Int32
            if result < 0 {
                value = 127
            } else if raw & 0x7F == 0 {
                value = (raw >> 8) & 0xFF  // WEXITSTATUS
            } else {
                value = 128 + (raw & 0x7F)  // WTERMSIG
            }
            status = value
            return value
        }
    }
}
