/// What became of the values given to `updateValue`, each counted once, where it happens: the manager counts the
/// calls, the notification queue counts the copies (one per target central). Nothing disappears without showing up
/// here.
public struct NotificationCounts: Hashable, Sendable {
    /// `updateValue` calls that returned true for a published characteristic: queued, or reaching no central.
    public var accepted = 0
    /// Accepted updates that reached no central because none was subscribed at that moment (accepted, as Core
    /// Bluetooth accepts them, and never counted as sent).
    public var withoutSubscribers = 0
    /// `updateValue` calls refused because a target's queue was full ("not now": retry on
    /// `readyToUpdateSubscribers`).
    public var refusedFull = 0
    /// Copies queued (one per target central).
    public var enqueued = 0
    /// Copies the stack accepted.
    public var sent = 0
    /// Indications the central confirmed.
    public var confirmed = 0
    /// Copies discarded, for any reason (each also reported as `PeripheralEvent.updatesDropped`).
    public var dropped = 0
    /// Copies cut to the central's `maximumUpdateValueLength`.
    public var truncated = 0
    /// `readyToUpdateSubscribers` signals produced.
    public var readySignals = 0

    /// Nothing counted yet.
    public init() {}
}
