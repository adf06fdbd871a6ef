import Synchronization

/// How many requests arrived and how each was answered: `requests == answered` when nothing is outstanding.
public struct RequestCounts: Hashable, Sendable {
    /// Requests received from the stack (one per read, one per batch of writes).
    public var requests = 0
    /// Answered by the handler with a value or success.
    public var responded = 0
    /// Answered by the handler with an ATT error (including Invalid Offset from `ReadRequest.respond(with:)`).
    public var rejected = 0
    /// Dropped unanswered by the handler and answered with Unlikely Error by the request's `deinit`.
    public var dropped = 0
    /// Not answered before the deadline and answered with an error by the engine.
    public var expired = 0
    /// Answered by the engine itself: no such characteristic, or the manager was shut down.
    public var answeredByEngine = 0
    /// Answers the handler gave after the engine had already answered: refused, never sent.
    public var refusedLate = 0
    /// Answers that were not sent because the stack expects none (write without response).
    public var withoutReply = 0

    /// Every request answered exactly once, by anyone.
    public var answered: Int { responded + rejected + dropped + expired + answeredByEngine }
    /// Requests not answered yet.
    public var outstanding: Int { requests - answered }

    /// No requests yet.
    public init() {}
}

/// The counters, shared by every request's responder; a `Mutex` so that answers from any task count exactly. Tasks
/// may wait for a condition on them (`wait(within:until:)`): each change checks the waiting conditions, and costs
/// nothing more when no one waits.
package final class RequestLedger: Sendable {
    private struct State {
        var counts = RequestCounts()
        var waiters: [Int: Waiter] = [:]
        var lastWaiter = 0
    }

    /// What a waiter waits for.
    package typealias Condition = @Sendable (RequestCounts) -> Bool

    private struct Waiter {
        let condition: Condition
        let continuation: CheckedContinuation<Bool, Never>
    }

    private let state = Mutex(State())

    package init() {}

    /// A snapshot.
    package var snapshot: RequestCounts { state.withLock { $0.counts } }

    package func recordRequest() { change { $0.requests += 1 } }

    package func recordAnswer(by source: AnswerSource, isError: Bool, hasReply: Bool) {
        change { counts in
            switch source {
            case .handler: if isError { counts.rejected += 1 } else { counts.responded += 1 }
            case .dropped: counts.dropped += 1
            case .deadline: counts.expired += 1
            case .engine: counts.answeredByEngine += 1
            }
            if !hasReply { counts.withoutReply += 1 }
        }
    }

    package func recordRefusedLate() { change { $0.refusedLate += 1 } }

    /// True as soon as `condition` holds for the counts (checked now, then at each change); false after `limit` or
    /// when the caller is cancelled. `condition` runs under the ledger's lock: it must not read the ledger again.
    package func wait(within limit: Duration, until condition: @escaping Condition) async -> Bool {
        let id = state.withLock { state in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitUntilCancelled(id, condition) }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// True when `condition` holds, false once the task is cancelled (the wait's limit passed).
    private func waitUntilCancelled(_ id: Int, _ condition: @escaping Condition) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Under the lock the cancellation handler takes too: cancelled before this point means no waiter is
                // left behind for a handler that already ran.
                let now = state.withLock { state -> Bool? in
                    if condition(state.counts) { return true }
                    if Task.isCancelled { return false }
                    state.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
    }

    /// Applies `update`, then wakes the waiters whose condition now holds (outside the lock).
    private func change(_ update: (inout RequestCounts) -> Void) {
        let satisfied = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            update(&state.counts)
            guard !state.waiters.isEmpty else { return [] }
            let ready = state.waiters.filter { $0.value.condition(state.counts) }
            for id in ready.keys { state.waiters[id] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in satisfied { continuation.resume(returning: true) }
    }
}
