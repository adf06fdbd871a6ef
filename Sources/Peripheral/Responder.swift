import GATTModel
import Logging
import Synchronization

/// The one-shot box every request carries: whoever answers first (handler, `deinit`, deadline, engine) wins,
/// and exactly one answer reaches the stack. A `Mutex`, not an actor, because `deinit` cannot await.
package final class Responder: Sendable {
    private enum State {
        case pending
        case answered(by: AnswerSource)
    }

    /// What the request is, for logs: "read hr-measurement from /org/bluez/hci0/dev_…, offset 0".
    package var summary: String { describe() }
    /// Builds `summary` only when a log line needs it: formatting it for every request costs more than answering.
    private let describe: @Sendable () -> String
    private let state = Mutex(State.pending)
    private let reply: (@Sendable (Result<[UInt8], ATTError>) -> Void)?
    private let ledger: RequestLedger
    private let logger: Logger

    /// A pending request; `reply` is the stack's way to answer, nil when the stack expects no reply.
    package init(
        summary: @autoclosure @escaping @Sendable () -> String, reply: (@Sendable (Result<[UInt8], ATTError>) -> Void)?,
        ledger: RequestLedger,
        logger: Logger
    ) {
        self.describe = summary
        self.reply = reply
        self.ledger = ledger
        self.logger = logger
        ledger.recordRequest()
    }

    /// The deadline's answer: `error`, unless the request was answered already (then nothing happens).
    package func expire(with error: ATTError) {
        answer(.failure(error), by: .deadline)
    }

    /// Whether an answer has been given.
    package var isAnswered: Bool {
        state.withLock { if case .answered = $0 { true } else { false } }
    }

    /// Answers unless answered already; the first caller's result is the one the stack gets.
    @discardableResult
    package func answer(_ result: Result<[UInt8], ATTError>, by source: AnswerSource) -> AnswerDelivery {
        // The first answer wins; nil when this one did.
        let first = state.withLock { state -> AnswerSource? in
            if case .answered(let first) = state { return first }
            state = .answered(by: source)
            return nil
        }
        if let first {
            // deinit runs after every consuming answer: finding the request answered is the normal case. So is a
            // deadline coming due after the answer: neither is a late answer.
            guard source != .dropped, source != .deadline else { return .refused(alreadyAnsweredBy: first) }
            ledger.recordRefusedLate()
            logger.warning("late answer refused: \(summary) was already answered by \(first)")
            return .refused(alreadyAnsweredBy: first)
        }
        // Counted before it is sent: once the central has its answer, `requests == answered` must already hold
        // for anyone reading the counters (a test's central asks for them right after its last reply).
        let isError: Bool
        if case .failure = result { isError = true } else { isError = false }
        ledger.recordAnswer(by: source, isError: isError, hasReply: reply != nil)
        // Reply outside the lock: the stack's reply may take its own locks.
        reply?(result)
        switch (source, result) {
        case (.handler, .success): logger.trace("answered \(summary)")
        case (.handler, .failure(let error)): logger.debug("answered \(summary) with \(error)")
        case (_, .failure(let error)): logger.warning("\(summary) answered by \(source) with \(error)")
        case (_, .success): logger.debug("\(summary) answered by \(source)")
        }
        return .delivered
    }
}
