import Synchronization

/// The one way a task waits for a condition on some state: the owner calls `changed()` after each change, and a task
/// waits in `first(within:clock:isolation:_:)` until its condition holds, checked now and again after each change,
/// or until its deadline on an injected clock passes. No polling: a deadline only bounds the wait, so a failing test
/// ends.
///
/// The condition is an `async` closure, so it may read an actor's state (the fake bluetoothd, the manager) as well
/// as a lock's. A change that comes while a condition is being checked is not lost: each wait remembers which
/// change it last looked after (an event count), and sleeps only when none came since. The condition is asked after
/// a change, not during it: a state that holds only between two quick changes may be missed, so wait for states
/// that settle or counts that grow. (Plain threads wait on a semaphore instead: Lab's `ThreadJob`.)
public final class ChangeSignal: Sendable {
    private struct Sleeper {
        /// Resumed with true at a change, false when the wait gives up (its deadline, or its task cancelled).
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var sleepers: [Int: Sleeper] = [:]
        var lastSleeper = 0
    }

    /// How many changes there have been: a wait sleeps only while it is still the one it checked after.
    private let changes = Atomic<UInt64>(0)
    /// How many tasks sleep: `changed()` takes the lock only when some do, so a change no one waits for costs two
    /// atomic operations (the request path counts every request and answer through one).
    private let sleeping = Atomic<Int>(0)
    private let state = Mutex(State())

    /// A signal with no change yet and no one waiting.
    public init() {}

    /// Wakes every waiting task to check its condition again: call it after each change of what conditions read.
    public func changed() {
        // Sequentially consistent on both sides: either this sees the sleeper counted, or the sleeper sees the new
        // count of changes and does not sleep (`sleep(after:)`).
        changes.add(1, ordering: .sequentiallyConsistent)
        guard sleeping.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let woken = state.withLock { state in
            let all = state.sleepers.values.map(\.continuation)
            state.sleepers.removeAll()
            sleeping.subtract(all.count, ordering: .sequentiallyConsistent)
            return all
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// The first non-nil answer of `check`, asked now and after each change; nil once `limit` has passed on `clock`
    /// or the task is cancelled (a change no one announced is not looked for). `check` runs in the caller's
    /// isolation, so an actor's condition reads its own state.
    public func first<T: Sendable, C: Clock>(
        within limit: Duration, clock: C = ContinuousClock(), isolation: isolated (any Actor)? = #isolation,
        _ check: () async -> T?
    ) async -> T? where C.Duration == Duration {
        let deadline = clock.now.advanced(by: limit)
        while true {
            let seen = changes.load(ordering: .sequentiallyConsistent)
            if let found = await check() { return found }
            guard await sleep(after: seen, until: deadline, on: clock) else { return nil }
        }
    }

    /// True as soon as `condition` holds, asked now and after each change; false once `limit` has passed on `clock`
    /// or the task is cancelled.
    public func until<C: Clock>(
        within limit: Duration, clock: C = ContinuousClock(), isolation: isolated (any Actor)? = #isolation,
        _ condition: () async -> Bool
    ) async -> Bool where C.Duration == Duration {
        await first(within: limit, clock: clock, isolation: isolation) { await condition() ? true : nil } ?? false
    }

    /// True once a change after the `seen`-th has come (at once if one has), false at `deadline` or when the task is
    /// cancelled.
    private func sleep<C: Clock>(after seen: UInt64, until deadline: C.Instant, on clock: C) async -> Bool
    where C.Duration == Duration {
        guard !Task.isCancelled, clock.now < deadline else { return false }
        let id = state.withLock { state in
            state.lastSleeper += 1
            return state.lastSleeper
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.park(id, after: seen) }
            group.addTask {
                try? await clock.sleep(until: deadline, tolerance: nil)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Sleeper `id` until the next change after the `seen`-th (true), or until its task is cancelled (false).
    private func park(_ id: Int, after seen: UInt64) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Under the lock the cancellation handler takes too: cancelled before this point, no sleeper is
                // left for a handler that already ran.
                let now = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    sleeping.add(1, ordering: .sequentiallyConsistent)
                    if changes.load(ordering: .sequentiallyConsistent) != seen {
                        sleeping.subtract(1, ordering: .sequentiallyConsistent)
                        return true
                    }
                    state.sleepers[id] = Sleeper(continuation: continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else { return nil }
                sleeping.subtract(1, ordering: .sequentiallyConsistent)
                return sleeper
            }
            sleeper?.continuation.resume(returning: false)
        }
    }
}
