import GATTModel
import Synchronization

/// The three engines of a running profile, advanced together. Value types, so a write can be tried on a copy and
/// committed only when the whole batch is accepted.
struct RunningBehaviour: Sendable {
    var schedules: Schedules
    var rules: WriteRules
    var faults: Faults
    /// The last characteristic `isGoverned` found no rule or protocol for. Which characteristics are governed is
    /// fixed by the profile (a reset puts back the same rules), so a repeated write to it is one string comparison
    /// (the same id's storage each time) instead of a hash.
    var lastUngoverned: String? = nil

    /// Whether a rule or a protocol answers writes to the characteristic (`WriteRules.hasRule`).
    mutating func isGoverned(_ characteristicID: String) -> Bool {
        if characteristicID == lastUngoverned { return false }
        guard !rules.hasRule(for: characteristicID) else { return true }
        lastUngoverned = characteristicID
        return false
    }

    /// The earliest moment any engine needs a tick.
    var nextDeadline: Duration? {
        [schedules.nextDeadline, rules.nextDeadline, faults.nextDeadline].compactMap { $0 }.min()
    }

    /// Ticks every engine at `now`, in a fixed order (schedules, ramps, timed faults).
    mutating func tick(at now: Duration) -> [EmulationAction] {
        schedules.tick(at: now, state: rules.state) + rules.tick(at: now) + faults.tick(at: now)
    }

    /// Back to `initial` (the engines as the profile built them) at `now`: schedules restarted with their
    /// subscribers kept, ramps stopped, faults armed through the control socket dropped and the profile's own
    /// counting requests from now, timed ones armed from now. `isStarted` says whether the emulator had started
    /// the engines (faults and schedules start with it).
    mutating func reset(to initial: RunningBehaviour, at now: Duration, isStarted: Bool) {
        schedules.restart(from: initial.schedules, at: now)
        rules = initial.rules
        faults = initial.faults
        if isStarted { faults.start(at: now) }
    }

    /// Tells every engine about a value that was stored, so the next generated or composed value builds on it.
    mutating func valueChanged(_ id: String, to value: [UInt8]) {
        schedules.valueChanged(id, to: value)
        rules.valueChanged(id, to: value)
    }
}

/// The engines shared by the request handler (which runs on many tasks at once) and the emulator's actor.
/// A class only to share one `Mutex`; every access is a short critical section with no `await` inside.
final class SharedBehaviour: Sendable {
    private let engines: Mutex<RunningBehaviour>

    init(_ engines: RunningBehaviour) { self.engines = Mutex(engines) }

    func withLock<T: Sendable>(_ body: (inout RunningBehaviour) -> T) -> T {
        engines.withLock { body(&$0) }
    }
}
