import GATTModel
import GATTProfile

/// Runs a profile's schedules as a state machine: no clock, no timer, no I/O. The caller reads `nextDeadline`,
/// waits until then on its own clock, calls `tick(at:)` and performs the returned actions.
///
/// Times are `Duration`s on the caller's monotonic clock (for example `ContinuousClock.now - launch`).
///
/// - A `launch` schedule runs from `start(at:)`; a `first-subscription` schedule runs while its characteristic
///   has at least one subscriber and pauses while it has none (resuming one interval after the next subscription).
/// - The first tick comes one interval after the schedule starts or resumes; the value before it is the declared one.
/// - Missed ticks: when `now` has passed several deadlines (a suspended VM, a busy actor), the schedule fires
///   **once** and re-aligns to its grid (start + k * interval), rather than catching up with a burst of stale values.
///   So a counter advances one step per fired tick, never per missed one.
/// - Generators see the time since `start(at:)`, so a sine or a replay follows the clock even across pauses.
/// - A schedule paced by its recording (a whole-value `replay` without interval, `Schedule.isRecordedPace`) fires at
///   each row's time, counted from when it starts or resumes, and sends that row; a missed row is skipped the same
///   way (one firing, the latest row due). A recording that does not repeat stops after its last row.
/// - Schedules that fire at the same instant act in declaration order.
/// - `pause` holds a characteristic's schedules whatever their start rule, so a test can set a value and keep it;
///   `resume` lets them run again from that moment (first tick one interval later), when their rule says they run.
public struct Schedules: Sendable {
    private struct Run: Sendable {
        var schedule: Schedule
        var composer: ValueComposer
        /// The grid origin and the next tick while running; nil while paused or not started.
        var anchor: Duration?
        var nextTick: Duration?
        /// Held by the control socket (`schedules pause`): it does not run until resumed.
        var isHeld = false
    }

    /// One schedule as the control socket lists it.
    public struct Status: Sendable, Equatable {
        /// The characteristic the schedule writes.
        public let characteristicID: String
        /// Its interval; zero for a schedule paced by its recording.
        public let interval: Duration
        /// True when it sends a recording's rows at their own times (`Schedule.isRecordedPace`).
        public let isRecordedPace: Bool
        /// True while `pause` holds it.
        public let isPaused: Bool
        /// True while it ticks (started, not held, and subscribed when it starts on the first subscription).
        public let isRunning: Bool
    }

    private var runs: [Run]
    private var values: [String: [UInt8]]
    private var subscribers: [String: Int] = [:]
    private var startTime: Duration?

    /// The schedules of a profile, ready to start. Throws `BehaviourError` when a schedule names an unknown
    /// characteristic or field, or a replay file cannot be loaded (relative to `baseDirectory`).
    public init(profile: PeripheralProfile, baseDirectory: String? = nil) throws(BehaviourError) {
        var runs: [Run] = []
        // A transfer is not ticked: the emulator streams it to each subscriber (TransferDefinition).
        for schedule in profile.behaviour.schedules where schedule.action != .transfer {
            guard let characteristic = profile.characteristic(id: schedule.characteristicID) else {
                throw .unknownCharacteristic(schedule.characteristicID)
            }
            let composer = try ValueComposer(
                characteristic: characteristic, generators: schedule.generators, baseDirectory: baseDirectory)
            runs.append(Run(schedule: schedule, composer: composer))
        }
        self.runs = runs
        // Only the values a schedule composes into: a write elsewhere, nearly every write, changes nothing here.
        values = Dictionary(
            profile.characteristics.lazy.filter { characteristic in
                runs.contains { $0.schedule.characteristicID == characteristic.id }
            }.map { ($0.id, $0.value.bytes) }
        ) { first, _ in first }
    }

    /// Starts the schedules: `launch` ones now, `first-subscription` ones if already subscribed.
    public mutating func start(at now: Duration) {
        startTime = now
        for index in runs.indices {
            let run = runs[index]
            if shouldRun(run) { resume(index, at: now) }
        }
    }

    /// Back to `initial` (this profile's schedules as built, never started), started again at `now` if these had
    /// started, keeping how many centrals subscribe to each characteristic: a `reset` puts the device back as the
    /// profile starts it, but who is subscribed is the centrals' business. Holds are released, generators start
    /// over (a sine from its phase at 0, a counter from the declared value, a replay from its first row).
    public mutating func restart(from initial: Schedules, at now: Duration) {
        let wasStarted = startTime != nil
        let subscribed = self.subscribers
        self = initial
        self.subscribers = subscribed
        if wasStarted { start(at: now) }
    }

    /// Holds the schedules of `characteristicID` (every schedule when nil) until `resume`; returns how many
    /// schedules that names, so a caller can refuse an ID that has none.
    public mutating func pause(_ characteristicID: String?) -> Int {
        let indices = indices(of: characteristicID)
        for index in indices {
            runs[index].isHeld = true
            runs[index].nextTick = nil
        }
        return indices.count
    }

    /// Releases what `pause` held; each runs again from `now` when its start rule says it runs. Returns how many
    /// schedules `characteristicID` names (every schedule when nil).
    public mutating func resume(_ characteristicID: String?, at now: Duration) -> Int {
        let indices = indices(of: characteristicID)
        for index in indices where runs[index].isHeld {
            runs[index].isHeld = false
            if startTime != nil && shouldRun(runs[index]) { resume(index, at: now) }
        }
        return indices.count
    }

    /// The schedules of `characteristicID`, every one when nil.
    private func indices(of characteristicID: String?) -> [Int] {
        runs.indices.filter { characteristicID == nil || runs[$0].schedule.characteristicID == characteristicID }
    }

    /// Every schedule, in declaration order.
    public var statuses: [Status] {
        runs.map {
            Status(
                characteristicID: $0.schedule.characteristicID, interval: $0.schedule.interval,
                isRecordedPace: $0.schedule.isRecordedPace, isPaused: $0.isHeld, isRunning: $0.nextTick != nil)
        }
    }

    /// Whether a schedule's start rule says it runs now: `launch` always, `first-subscription` while subscribed;
    /// never while held.
    private func shouldRun(_ run: Run) -> Bool {
        !run.isHeld && (run.schedule.start == .launch || subscribers[run.schedule.characteristicID, default: 0] > 0)
    }

    /// Records how many centrals subscribe to a characteristic: from none to some resumes its
    /// `first-subscription` schedules, from some to none pauses them.
    public mutating func subscribersChanged(_ characteristicID: String, count: Int, at now: Duration) {
        let previous = subscribers[characteristicID, default: 0]
        subscribers[characteristicID] = max(count, 0)
        guard startTime != nil else { return }
        for index in runs.indices
        where runs[index].schedule.characteristicID == characteristicID
            && runs[index].schedule.start == .firstSubscription
        {
            if previous == 0 && count > 0 && !runs[index].isHeld { resume(index, at: now) }
            if previous > 0 && count <= 0 { runs[index].nextTick = nil }
        }
    }

    /// Tells the engine a value changed elsewhere (a write, a ramp), so generated fields compose on it; a value no
    /// schedule composes into is not kept.
    public mutating func valueChanged(_ characteristicID: String, to value: [UInt8]) {
        // A profile without schedules, the commonest, skips the hash.
        guard !values.isEmpty, let index = values.index(forKey: characteristicID) else { return }
        values.values[index] = value
    }

    /// Lets the generators of one field of a characteristic go on from `value` (a protocol's `set-field`): a counter
    /// or random walk takes its next step from it, a `follow` moves on from it. The others keep their series.
    public mutating func rebase(_ field: String, of characteristicID: String, to value: FieldValue) {
        guard let number = value.number else { return }
        for index in runs.indices where runs[index].schedule.characteristicID == characteristicID {
            runs[index].composer.rebase(field, to: number)
        }
    }

    /// The value the engine last produced or was told about, for a characteristic a schedule composes into; nil
    /// for any other.
    public func value(of characteristicID: String) -> [UInt8]? { values[characteristicID] }

    /// When `tick(at:)` next has something to do; nil when every schedule is paused or not started.
    public var nextDeadline: Duration? { runs.compactMap(\.nextTick).min() }

    /// Fires every schedule whose deadline is at or before `now`, once each, and returns what to do; `state` is the
    /// device's state, which a `follow` generator moves toward.
    public mutating func tick(at now: Duration, state: [String: FieldValue] = [:]) -> [EmulationAction] {
        guard let startTime else { return [] }
        var actions: [EmulationAction] = []
        for index in runs.indices {
            guard let due = runs[index].nextTick, let anchor = runs[index].anchor, due <= now else { continue }
            let id = runs[index].schedule.characteristicID
            let isRecordedPace = runs[index].schedule.isRecordedPace
            // A recording's times count from the schedule's own start; other generators see the device's clock.
            let elapsed = isRecordedPace ? now - anchor : now - startTime
            let composition = runs[index].composer.next(current: values[id] ?? [], at: elapsed, state: state)
            values[id] = composition.value
            actions += composition.warnings.map { .warning(characteristicID: id, message: $0) }
            actions.append(.storing(composition.value, in: id, by: runs[index].schedule.action))
            runs[index].nextTick =
                isRecordedPace
                ? runs[index].composer.nextRecordedTime(after: now - anchor).map { anchor + $0 }
                : Self.firstGridPoint(after: now, anchor: anchor, interval: runs[index].schedule.interval)
        }
        return actions
    }

    private mutating func resume(_ index: Int, at now: Duration) {
        runs[index].anchor = now
        guard runs[index].schedule.isRecordedPace else {
            runs[index].nextTick = now + runs[index].schedule.interval
            return
        }
        // Just before zero, so a row recorded at 0 s is due at once.
        runs[index].nextTick = runs[index].composer.nextRecordedTime(after: .milliseconds(-1)).map { now + $0 }
    }

    /// The first `anchor + k * interval` strictly after `now`: one division, then exact `Duration` fix-ups,
    /// so a jump of a day over a 50 ms schedule costs no loop of a million steps.
    static func firstGridPoint(after now: Duration, anchor: Duration, interval: Duration) -> Duration {
        guard interval > .zero else { return now + .seconds(1) }
        let steps = max(Int64((now - anchor) / interval), 0)
        var next = anchor + interval * steps
        while next <= now { next += interval }
        while next - interval > now { next -= interval }
        return next
    }
}
