import GATTModel
import Synchronization

/// The three engines of a running profile, advanced together. Value types, so a write can be tried on a copy and
/// committed only when the whole batch is accepted.
struct BehaviourEngines: Sendable {
    var schedules: ScheduleEngine
    var rules: WriteRuleEngine
    var faults: FaultEngine

    /// The earliest moment any engine needs a tick.
    var nextDeadline: Duration? {
        [schedules.nextDeadline, rules.nextDeadline, faults.nextDeadline].compactMap { $0 }.min()
    }

    /// Ticks every engine at `now`, in a fixed order (schedules, ramps, timed faults).
    mutating func tick(at now: Duration) -> [EmulationAction] {
        schedules.tick(at: now) + rules.tick(at: now) + faults.tick(at: now)
    }

    /// Tells every engine about a value that was stored, so the next generated or composed value builds on it.
    mutating func valueChanged(_ id: String, to value: [UInt8]) {
        schedules.valueChanged(id, to: value)
        rules.valueChanged(id, to: value)
    }
}

/// The engines shared by the request handler (which runs on many tasks at once) and the emulator's actor.
/// A class only to share one `Mutex`; every access is a short critical section with no `await` inside.
final class SharedEngines: Sendable {
    private let engines: Mutex<BehaviourEngines>

    init(_ engines: BehaviourEngines) { self.engines = Mutex(engines) }

    func withLock<T: Sendable>(_ body: (inout BehaviourEngines) -> T) -> T {
        engines.withLock { body(&$0) }
    }
}
