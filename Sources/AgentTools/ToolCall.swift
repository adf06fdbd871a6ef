import ControlProtocol

/// What one tool call does on the control socket: the request line it sends, and for the two `events` tools what
/// is done with the answer.
public enum ToolCall: Hashable, Sendable {
    /// Sends the request and answers with its response.
    case command([String: JSONValue])
    /// Sends `events` and answers with the latest `limit` events `filter` matches, oldest first.
    case recentEvents(EventFilter, limit: Int)
    /// Sends `events` with `follow` and answers with the first event from then on that `filter` matches, or an
    /// error once `timeout` has passed.
    case waitForEvent(EventFilter, timeout: Duration)

    /// The request line's object, exactly as sent.
    public var request: [String: JSONValue] {
        switch self {
        case .command(let request): request
        case .recentEvents: ["command": .string(ControlCommand.events.rawValue)]
        case .waitForEvent: ["command": .string(ControlCommand.events.rawValue), "follow": .bool(true)]
        }
    }
}
