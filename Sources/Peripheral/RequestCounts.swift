import Synchronization
import Waiting

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
/// may wait for a condition on them (`wait(within:until:)`, through `ChangeSignal`): each change rings the signal,
/// which costs two atomic operations when no one waits.
package final class RequestLedger: Sendable {
    /// What a waiter waits for.
    package typealias Condition = @Sendable (RequestCounts) -> Bool

    private let counts = Mutex(RequestCounts())
    private let changes = ChangeSignal()

    package init() {}

    /// A snapshot.
    package var snapshot: RequestCounts { counts.withLock { $0 } }

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
    /// when the caller is cancelled.
    package func wait(within limit: Duration, until condition: @escaping Condition) async -> Bool {
        await changes.until(within: limit) { condition(snapshot) }
    }

    /// Applies `update`, then wakes the waiters to look again.
    private func change(_ update: (inout RequestCounts) -> Void) {
        counts.withLock { update(&$0) }
        changes.changed()
    }
}
