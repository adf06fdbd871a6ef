import GATTModel
import Logging
import Synchronization

/// The one owner of "answered exactly once": every request carries one, and whoever answers first (handler,
/// `deinit`, deadline, engine) takes the stack's reply out of it; later answers find it gone. A `Mutex`, not an
/// actor, because `deinit` cannot await.
package final class Responder: Sendable {
    private enum State: ~Copyable {
        /// Not answered yet; the reply is nil when the stack expects none.
        case pending(reply: (any RequestReply & ~Copyable)?)
        case answered(by: AnswerSource)
    }

    /// What `answer` found: the reply to send, or who answered before.
    private enum Turn: ~Copyable {
        case first(reply: (any RequestReply & ~Copyable)?)
        case late(firstAnswer: AnswerSource)
    }

    /// What the request is, for logs: "read hr-measurement from /org/bluez/hci0/dev_…, offset 0".
    package var summary: String { describe() }
    /// Builds `summary` only when a log line needs it: formatting it for every request costs more than answering.
    private let describe: @Sendable () -> String
    private let state: Mutex<State>
    private let hasReply: Bool
    private let ledger: RequestLedger
    private let logger: Logger
    /// `logger`'s level, asked once by whoever makes requests: swift-log's `logLevel` copies the handler, and every
    /// answer would ask it (Benchmarks/README.md, "The last route kept").
    private let logLevel: Logger.Level

    /// A pending request; `reply` is the stack's way to answer, nil when the stack expects no reply. `logLevel` is
    /// `logger`'s, when the caller has it at hand.
    package init(
        summary: @autoclosure @escaping @Sendable () -> String, reply: consuming (any RequestReply & ~Copyable)?,
        ledger: RequestLedger,
        logger: Logger, logLevel: Logger.Level? = nil
    ) {
        self.describe = summary
        hasReply = reply != nil
        state = Mutex(.pending(reply: reply))
        self.ledger = ledger
        self.logger = logger
        self.logLevel = logLevel ?? logger.logLevel
        ledger.recordRequest()
    }

    /// The deadline's answer: `error`, unless the request was answered already (then nothing happens).
    package func expire(with error: ATTError) {
        answer(.failure(error), by: .deadline)
    }

    /// Whether an answer has been given.
    package var isAnswered: Bool {
        state.withLock { state in
            switch state {
            case .pending: false
            case .answered: true
            }
        }
    }

    /// Answers unless answered already; the first caller's result is the one the stack gets.
    @discardableResult
    package func answer(_ result: Result<[UInt8], ATTError>, by source: AnswerSource) -> AnswerDelivery {
        // The first answer wins: it takes the reply out, and the state keeps who answered.
        let turn = state.withLock { state -> Turn in
            switch consume state {
            case .answered(let first):
                state = .answered(by: first)
                return .late(firstAnswer: first)
            case .pending(let reply):
                state = .answered(by: source)
                return .first(reply: reply)
            }
        }
        let reply: (any RequestReply & ~Copyable)?
        switch consume turn {
        case .late(let first):
            // deinit runs after every consuming answer: finding the request answered is the normal case. So is a
            // deadline coming due after the answer: neither is a late answer.
            guard source != .dropped, source != .deadline else { return .refused(alreadyAnsweredBy: first) }
            ledger.recordRefusedLate()
            logger.warning("late answer refused: \(summary) was already answered by \(first)")
            return .refused(alreadyAnsweredBy: first)
        case .first(let taken):
            reply = taken
        }
        // Counted before it is sent: once the central has its answer, `requests == answered` must already hold
        // for anyone reading the counters (a test's central asks for them right after its last reply).
        let isError: Bool
        if case .failure = result { isError = true } else { isError = false }
        ledger.recordAnswer(by: source, isError: isError, hasReply: hasReply)
        // Sent outside the lock: the stack's reply may take its own locks.
        if var reply = consume reply { reply.send(result) }
        switch (source, result) {
        case (.handler, .success): if logLevel <= .trace { logger.trace("answered \(summary)") }
        case (.handler, .failure(let error)):
            if logLevel <= .debug { logger.debug("answered \(summary) with \(error)") }
        case (_, .failure(let error)): logger.warning("\(summary) answered by \(source) with \(error)")
        case (_, .success): logger.debug("\(summary) answered by \(source)")
        }
        return .delivered
    }
}
