import Synchronization

/// A clock that moves only when a test says so: sleepers wake when `advance(by:)` passes their deadline, and a
/// sleep until a moment already passed returns at once. Pass it to `PeripheralManager` (request deadlines) or
/// `Emulator` (schedules, fault delays) and advance time instead of sleeping.
public final class ManualClock: Clock, Sendable {
    /// A moment: time since the clock was made.
    public struct Instant: InstantProtocol {
        /// Time since the clock was made.
        public var offset: Duration
        /// The moment `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this moment to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .zero
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        /// Tasks waiting in `waitForSleepers(_:)`, each for a number of sleepers.
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// Takes the watchers whose count of sleepers is reached.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let count = sleepers.count
            let satisfied = watchers.filter { $0.count <= count }.map(\.continuation)
            watchers.removeAll { $0.count <= count }
            return satisfied
        }
    }

    private let state = Mutex(State())

    /// A clock at time zero.
    public init() {}

    /// The present moment: moves only with `advance(by:)`.
    public var now: Instant { Instant(offset: state.withLock { $0.now }) }
    /// Exact.
    public var minimumResolution: Duration { .zero }
    /// Returns once at least `count` tasks sleep on this clock: advance after it, and a timer armed on another task
    /// cannot miss the advance by arming late.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                guard state.sleepers.count < count else { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Sleeps until `deadline` on this clock; throws `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock {
                    state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if deadline.offset <= state.now || Task.isCancelled { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: deadline.offset, continuation: continuation)
                    return (false, state.satisfiedWatchers())
                }
                for watcher in watchers { watcher.resume() }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }
}
