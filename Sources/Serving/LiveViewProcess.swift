import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu run --ui`: the live view (`blemu-cli ui`) as a child of the serving process, started once the control
/// socket answers and stopped with the device. The view is a process of its own, so `blemu run` without `--ui` links
/// and costs nothing of it (its HTTP server, its page), and a view that fails leaves the device serving.
struct LiveViewProcess {
    /// The child.
    let process: SpawnedProcess

    /// Starts `blemu-cli ui` for the device at `control`, listening on `listen`, with the event log `events` when it
    /// is a file. Its stdout goes to stderr when `quietStdout` (stdout carries the event log's lines). Returns nil,
    /// having said why, when it cannot start.
    static func start(control: String, listen: String, events: String?, quietStdout: Bool) -> LiveViewProcess? {
        guard let cli = Handover.locate(Handover.commands) else {
            Console.error("blemu: --ui: blemu-cli is not installed beside blemu; serving without the view")
            return nil
        }
        var arguments = [cli, "ui", "--control", control, "--listen", listen]
        if let events, events != "-" { arguments += ["--events", events] }
        // The view watches this process (`Handover.liveParentVariable`): killed with SIGKILL, it cannot stop the view.
        do {
            return LiveViewProcess(
                process: try SpawnedProcess.start(
                    arguments, environment: [Handover.liveParentVariable: "\(getpid())"],
                    standardOutput: quietStdout ? .standardError : .inherited))
        } catch {
            Console.error("blemu: --ui: cannot start \(cli): \(error); serving without the view")
            return nil
        }
    }

    /// Stops the view (SIGTERM: it closes its pages and exits) and waits for it, at most two seconds before SIGKILL.
    func stop() { process.stop(grace: .seconds(2)) }
}
