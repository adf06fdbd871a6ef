import Peripheral

/// What a running emulator has done: the control socket's `counters` and the numbers tests assert on.
public struct EmulatorCounters: Hashable, Sendable {
    /// Requests and their answers, from the manager's ledger: `requests.requests == requests.answered` when idle.
    public var requests = RequestCounts()
    /// Updates the notification queue accepted from the emulator (one per `updateValue` that returned true).
    public var queued = 0
    /// Times the queue said "full" and the update waited for `readyToUpdateSubscribers`.
    public var refusedFull = 0
    /// Updates (or transfers) waiting in the emulator's outbox now.
    public var waiting = 0
    /// Notifications and indications the manager handed to the stack.
    public var sent = 0
    /// Updates that reached no central: none subscribed then (a value set in the moment between a central's CCCD
    /// write and bluetoothd's AcquireNotify lands here too).
    public var withoutSubscribers = 0
    /// Updates the manager dropped (central gone or unsubscribed), as reported in its events.
    public var dropped = 0
    /// Event log lines not written: dropped behind a slow reader or lost to a failed write (`EventLog.lostLines`).
    public var eventLinesLost = 0

    /// No activity yet.
    public init() {}
}

extension Emulator {
    /// A snapshot of the counters.
    public func counters() async -> EmulatorCounters {
        var snapshot = counts
        snapshot.waiting = outbox.count
        snapshot.eventLinesLost = log?.lostLines ?? 0
        if let manager {
            snapshot.requests = manager.requestCounts
            snapshot.sent = await manager.notificationStatistics.sent
            snapshot.withoutSubscribers = await manager.updatesWithoutSubscribers
        }
        return snapshot
    }
}
