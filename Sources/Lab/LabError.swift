/// Why a lab run could not give a command's exit code. The command's own failure is not an error: it is
/// `LabRun.exitCode`.
public enum LabError: Error, Sendable, CustomStringConvertible {
    /// The configuration cannot boot (a usage error: too few controllers, a path qemu cannot carry).
    case invalidConfiguration(String)
    /// This machine lacks part of the rig; the text is `LabPrerequisites.report` with the `apt-get` line.
    case prerequisitesMissing(String)
    /// A host file could not be written or read (results directory, initramfs cache, profile copy).
    case io(String)
    /// A bring-up step in the VM failed or its bounded wait ran out; `logTail` holds the relevant logs' ends.
    case stepFailed(step: String, reason: String, logTail: String)
    /// The whole run passed its timeout while in `step`; the VM was killed.
    case timedOut(step: String, seconds: Int64, logTail: String)
    /// qemu exited without an exit code from the VM (did not start, kernel panic, power off in the initramfs).
    case machineFailed(status: Int32, step: String, logTail: String)

    /// A message for people: what failed, where, and the logs' ends.
    public var description: String {
        switch self {
        case .invalidConfiguration(let problem): "lab: \(problem)"
        case .prerequisitesMissing(let report): "lab: this machine cannot run the lab:\n\(report)"
        case .io(let problem): "lab: \(problem)"
        case .stepFailed(let step, let reason, let tail): "lab: step '\(step)' failed: \(reason)\n\(tail)"
        case .timedOut(let step, let seconds, let tail):
            "lab: timed out after \(seconds) s in step '\(step)'; the VM was killed\n\(tail)"
        case .machineFailed(let status, let step, let tail):
            "lab: the VM stopped (qemu status \(status)) in step '\(step)' without an exit code\n\(tail)"
        }
    }
}
