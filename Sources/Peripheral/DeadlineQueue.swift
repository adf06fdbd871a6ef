import GATTModel
import Synchronization

/// The deadlines of a router's pending requests, served by one sleeping task instead of one per request: the one
/// deadline mechanism of the engine.
///
/// Every request gets the same duration, so deadlines come due in the order they were armed: a FIFO is the whole
/// schedule, and the task only ever sleeps until the oldest one. A `Task.sleep` per request cost a timer each that
/// stayed queued for the full duration even when the answer came in microseconds (about 0.8 KB a request: tens of
/// MiB at a few thousand requests a second with a 10 s deadline). Entries hold their responder weakly: an answered
/// request is not kept alive until its deadline. Time is the injected clock's, so tests advance it.
///
/// The FIFO is an array with a head index rather than swift-collections' `Deque`: it compacts itself in one line,
/// like `NotificationQueue`'s, and two such FIFOs do not pay for a dependency's build time in CI.
package final class DeadlineQueue: Sendable {
    private struct Entry {
        let due: Duration
        weak var responder: Responder?
    }

    private struct State {
        var entries: [Entry] = []
        /// Index of the oldest entry still waiting; the array is compacted when the task drains it.
        var head = 0
        var isRunning = false
    }

    private let duration: Duration
    private let error: ATTError
    private let clock: ElapsedClock
    private let state = Mutex(State())

    /// A queue answering `error` `duration` after each request is armed, by `clock`.
    package init(duration: Duration, error: ATTError, clock: ElapsedClock) {
        self.duration = duration
        self.error = error
        self.clock = clock
    }

    /// Answers `responder` with the error when its deadline passes, unless it was answered before.
    package func arm(_ responder: Responder) {
        let entry = Entry(due: clock.now() + duration, responder: responder)
        let start = state.withLock { state -> Bool in
            state.entries.append(entry)
            guard !state.isRunning else { return false }
            state.isRunning = true
            return true
        }
        if start { Task { await self.run() } }
    }

    /// Sleeps until the oldest deadline, expires what is due, and ends when nothing is left to wait for.
    private func run() async {
        while let due = nextDue() {
            if due > clock.now() { try? await clock.sleepUntil(due) }
            let now = clock.now()
            let expired = state.withLock { state -> [Responder] in
                var expired: [Responder] = []
                while state.head < state.entries.count, state.entries[state.head].due <= now {
                    if let responder = state.entries[state.head].responder { expired.append(responder) }
                    state.head += 1
                }
                // Compacted once half is spent: amortised O(1) per entry.
                if state.head > 0 && state.head * 2 >= state.entries.count {
                    state.entries.removeFirst(state.head)
                    state.head = 0
                }
                return expired
            }
            for responder in expired { responder.expire(with: error) }
        }
    }

    /// The oldest deadline, or nil after marking the task stopped (the next `arm` starts another).
    private func nextDue() -> Duration? {
        state.withLock { state in
            guard state.head < state.entries.count else {
                state.isRunning = false
                return nil
            }
            return state.entries[state.head].due
        }
    }
}
