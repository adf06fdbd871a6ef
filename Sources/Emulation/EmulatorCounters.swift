import Peripheral

/// What a running emulator has done: the control socket's `counters` and the numbers tests assert on. Each number
/// is counted once, by whoever decides it: the manager's requests and notifications, and the two things only the
/// emulator knows.
public struct EmulatorCounters: Hashable, Sendable {
    /// Requests and their answers, from the manager's ledger: `requests.requests == requests.answered` when idle.
    public var requests = RequestCounts()
    /// The updates the emulator gave the manager and what became of them.
    public var notifications = NotificationCounts()
    /// Updates waiting in the emulator's outbox now, for the queue to have room (a transfer counts as one).
    public var waiting = 0
    /// Updates the outbox had no room for, dropped (a schedule's, a rule's, a protocol's, a `set`'s, a
    /// subscription's transfer; a `notify` burst that does not fit is refused instead, and the client told).
    public var outboxDropped = 0
    /// Event log lines not written: dropped behind a slow reader or lost to a failed write (`EventLog.lostLines`).
    public var eventLinesLost = 0
    /// Requests handed to handlers over the control socket, and how they were decided.
    public var handlers = RequestHandlers.Counts()

    /// No activity yet.
    public init() {}
}

extension Emulator {
    /// A snapshot of the counters.
    public func counters() async -> EmulatorCounters {
        var snapshot = EmulatorCounters()
        snapshot.waiting = outbox.updates
        snapshot.outboxDropped = outboxDropped
        snapshot.eventLinesLost = log?.lostLines ?? 0
        snapshot.handlers = handler.handlers.counts
        if let manager {
            snapshot.requests = manager.requestCounts
            snapshot.notifications = await manager.notificationCounts
        }
        return snapshot
    }
}
