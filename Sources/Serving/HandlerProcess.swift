import Dispatch
import LocalIO
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu run --handler COMMAND`: the command (through `/bin/sh -c`) as a child of the serving process, started once
/// the control socket answers, with `BLEMU_CONTROL` naming it, and stopped with the device. A thread of its own waits
/// for it: when it exits, that is said on stderr and it is started again, after a pause that doubles from 1 s to 30 s
/// while it keeps failing within 10 s of starting (a handler with a crash in one path comes back; one that cannot
/// start does not spin). Meanwhile its requests get their fallback (docs/control-and-events.md, "Handlers").
final class HandlerProcess: Sendable {
    private struct State {
        var pid: pid_t = 0
        var isStopping = false
    }

    private let command: String
    private let control: String
    private let state = Mutex(State())
    /// Signalled by `stop`, and again by each wait that sees it: wakes the supervisor from a pause between restarts.
    private let stopRequested = DispatchSemaphore(value: 0)
    /// Signalled when the supervisor has reaped its last child and returned, and again by each wait that sees it (a
    /// second `stop` returns at once): what `stop` waits for.
    private let supervisorDone = DispatchSemaphore(value: 0)

    private init(command: String, control: String) {
        self.command = command
        self.control = control
    }

    /// Starts `command` for the device at `control` and watches it; nil, having said why, when it cannot start at
    /// all (no thread to watch it, or no shell): the device serves without it.
    static func start(command: String, control: String) -> HandlerProcess? {
        let process = HandlerProcess(command: command, control: control)
        guard let pid = process.spawn() else { return nil }
        process.state.withLock { $0.pid = pid }
        do { try DetachedThread.start { process.supervise() } } catch {
            Console.error("blemu: --handler: \(error); stopping it")
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            return nil
        }
        return process
    }

    private func spawn() -> pid_t? {
        // Its stdout joins stderr: blemu's own stdout carries what scripts read (the event log with `--events -`).
        switch ProcessSpawn.start(
            ["/bin/sh", "-c", command], environment: ["BLEMU_CONTROL": control], standardOutput: .standardError)
        {
        case .success(let pid): return pid
        case .failure(let error):
            Console.error("blemu: --handler: cannot start /bin/sh: \(error)")
            return nil
        }
    }

    /// Waits for the child; restarts it until `stop`. `state.pid` is 0 whenever no child of ours runs (reaped,
    /// pausing, or failing to start), so `stop` never signals a process group that is gone or reused.
    private func supervise() {
        var pause: Duration = .seconds(1)
        running: while true {
            let pid = state.withLock { $0.pid }
            let started = ContinuousClock.now
            // Waited for without reaping first: until `pid` is 0 under the lock, `stop` may still signal its
            // group, which must not be gone (and its number free for another) by then.
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
            let stopping = state.withLock { state in
                state.pid = 0
                return state.isStopping
            }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            if stopping { break }
            // A handler that ran a while before it failed starts over from a short pause.
            if ContinuousClock.now - started > .seconds(10) { pause = .seconds(1) }
            Console.error(
                "blemu: --handler \(Self.ending(status)); its requests get their fallback; starting it again in \(pause)"
            )
            var restarted: pid_t?
            while restarted == nil {
                if !sleep(pause) { break running }
                pause = min(pause * 2, .seconds(30))
                restarted = spawn()
            }
            guard let restarted else { break }
            let stoppedMeanwhile = state.withLock { state in
                state.pid = restarted
                return state.isStopping
            }
            if stoppedMeanwhile { kill(-restarted, SIGTERM) }
        }
        supervisorDone.signal()
    }

    /// Waits `pause`; false when `stop` came first (at once, not at the pause's end).
    private func sleep(_ pause: Duration) -> Bool {
        guard stopRequested.wait(timeout: .after(pause)) == .timedOut else {
            stopRequested.signal()
            return false
        }
        return !state.withLock { $0.isStopping }
    }

    /// How the child ended, in words. The shell in between reports a command killed by signal N as status 128 + N
    /// (dash waits for a `-c` command rather than exec it), so that is said too.
    static func ending(_ status: Int32) -> String {
        let signal = status & 0x7f
        guard signal == 0 else { return "was killed by signal \(signal)" }
        let code = (status >> 8) & 0xff
        return code > 128 ? "exited with status \(code) (killed by signal \(code - 128))" : "exited with status \(code)"
    }

    /// Stops the command (SIGTERM to its process group) and waits for the supervisor to reap it, at most two
    /// seconds before SIGKILL. Once `isStopping` is set the supervisor starts nothing more: a child it spawned
    /// meanwhile it signals itself, and a pause ends at once.
    func stop() {
        // Signalled under the lock: the supervisor clears `pid` under it before reaping, so a group signalled here
        // is a child's not yet reaped, never a number the system may have given to another process.
        state.withLock { state in
            state.isStopping = true
            if state.pid > 0 { kill(-state.pid, SIGTERM) }
        }
        stopRequested.signal()
        if supervisorDone.wait(timeout: .after(.seconds(2))) == .timedOut {
            state.withLock { state in
                if state.pid > 0 { kill(-state.pid, SIGKILL) }
            }
            supervisorDone.wait()
        }
        supervisorDone.signal()
    }
}
