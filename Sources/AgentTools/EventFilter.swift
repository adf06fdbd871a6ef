import ControlProtocol

/// Which events a tool looks for: a type (`notification`, `request`, ...) and a characteristic, each optional.
public struct EventFilter: Hashable, Sendable {
    /// The event log's types (docs/control-and-events.md, "The event log"), offered to agents as the schema's enum.
    public static let types = [
        "state", "connected", "disconnected", "request", "subscribed", "unsubscribed", "notification", "indication",
        "queue-full", "queue-ready", "outbox-full", "fault", "pairing", "restart", "protocol", "handler", "reset",
        "lines-dropped",
    ]

    /// The event's `type`, or nil for any.
    public var type: String?
    /// The event's `characteristic`, or nil for any (an event without one then never matches).
    public var characteristic: String?

    /// A filter on `type` and `characteristic`.
    public init(type: String? = nil, characteristic: String? = nil) {
        self.type = type
        self.characteristic = characteristic
    }

    /// Whether `event`, one event-log object, is one of these.
    public func matches(_ event: JSONValue) -> Bool {
        if let type, event["type"]?.string != type { return false }
        if let characteristic, event["characteristic"]?.string != characteristic { return false }
        return true
    }

    /// How a message names what was looked for: "`notification` event of battery-level".
    var spelled: String {
        let kind = type.map { "`\($0)` event" } ?? "event"
        return characteristic.map { "\(kind) of \($0)" } ?? kind
    }
}
