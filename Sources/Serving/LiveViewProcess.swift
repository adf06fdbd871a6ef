import Dispatch
import Emulation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu run --ui`: the live view (`blemu-live ui`) as a child of the serving process, started once the control
/// socket answers and stopped with the device. The view is a process of its own, so `blemu run` without `--ui` links
/// and costs nothing of it (its HTTP server, its page), and a view that fails leaves the device serving.
struct LiveViewProcess {
    /// The child's process id.
    let pid: pid_t

    /// Starts `blemu-live ui` for the device at `control`, listening on `listen`, with the event log `events` when it
    /// is a file. Its stdout goes to stderr when `quietStdout` (stdout carries the event log's lines). Returns nil,
    /// having said why, when it cannot start.
    static func start(control: String, listen: String, events: String?, quietStdout: Bool) -> LiveViewProcess? {
        guard let cli = Handover.locate(Handover.live) else {
            Console.error("blemu: --ui: blemu-live is not installed beside blemu; serving without the view")
            return nil
        }
        var arguments = [cli, "ui", "--control", control, "--listen", listen]
        if let events, events != "-" { arguments += ["--events", events] }
        // The view watches this process (`Handover.liveParentVariable`): killed with SIGKILL, it cannot stop the view.
        switch ChildSpawn.start(
            arguments, environment: [Handover.liveParentVariable: "\(getpid())"], stdoutToStderr: quietStdout)
        {
        case .success(let pid): return LiveViewProcess(pid: pid)
        case .failure(let error):
            Console.error("blemu: --ui: cannot start \(cli): \(error); serving without the view")
            return nil
        }
    }

    /// Stops the view (SIGTERM: it closes its pages and exits) and waits for it, at most two seconds before SIGKILL.
    func stop() {
        let pid = pid
        kill(pid, SIGTERM)
        // A thread of its own waits for the view's exit without reaping it, so the wait here is an event with a
        // deadline, not a poll, and the SIGKILL after it can only reach the view: unreaped, its pid stays its own.
        let exited = DispatchSemaphore(value: 0)
        do {
            try DetachedThread.start {
                var info = siginfo_t()
                while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
                exited.signal()
            }
            if exited.wait(timeout: .after(.seconds(2))) == .timedOut {
                kill(pid, SIGKILL)
                exited.wait()
            }
        } catch {
            // No thread to spare (the process's limit): the view loses its two seconds, not its reaping.
            kill(pid, SIGKILL)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
