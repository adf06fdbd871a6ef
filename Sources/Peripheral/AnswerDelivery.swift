/// Who answered a request.
public enum AnswerSource: Hashable, Sendable, CustomStringConvertible {
    /// The request handler, with `respond` or `reject`.
    case handler
    /// The request's `deinit`: the handler dropped it unanswered (answered with Unlikely Error).
    case dropped
    /// The engine, because the deadline passed.
    case deadline
    /// The engine, because the request could not reach a handler (unknown attribute, manager shut down).
    case engine

    /// A short phrase for logs.
    public var description: String {
        switch self {
        case .handler: "handler"
        case .dropped: "deinit (dropped unanswered)"
        case .deadline: "engine (deadline passed)"
        case .engine: "engine"
        }
    }
}

/// What became of an answer: delivered, or refused because the request was already answered.
public enum AnswerDelivery: Hashable, Sendable {
    /// The answer went to the stack (or, for a write without response, was accepted and needs no reply).
    case delivered
    /// The request had already been answered (by the deadline, typically): this answer was not sent.
    case refused(alreadyAnsweredBy: AnswerSource)

    /// Whether the answer went out.
    public var isDelivered: Bool { self == .delivered }
}
