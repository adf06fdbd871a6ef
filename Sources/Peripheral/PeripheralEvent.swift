import GATTModel

/// What the peripheral manager tells the application: Core Bluetooth's `CBPeripheralManagerDelegate`, as values.
///
/// Requests are not events: a `~Copyable` request cannot travel in an `AsyncStream`, so they go to the
/// `RequestHandler` instead, where the compiler can check they are answered once.
public enum PeripheralEvent: Hashable, Sendable {
    /// The state changed (`peripheralManagerDidUpdateState`).
    case stateChanged(PeripheralManagerState)
    /// State saved by a previous run is back, delivered before the first state change (`willRestoreState`).
    case willRestoreState(RestoredState)
    /// A central connected (or its link changed, e.g. a new MTU).
    case centralConnected(Central)
    /// A central disconnected, with the stack's reason when it gives one (BlueZ 5.83 and later); its subscriptions
    /// ended first, each with `unsubscribed`.
    case centralDisconnected(Central, reason: DisconnectReason?)
    /// A central subscribed to a characteristic's notifications or indications (`didSubscribeTo`).
    case subscribed(Central, Characteristic)
    /// A central unsubscribed, or disconnected while subscribed (`didUnsubscribeFrom`).
    case unsubscribed(Central, Characteristic)
    /// The queues that made `updateValue` return false have room again: retry (`isReady(toUpdateSubscribers:)`).
    case readyToUpdateSubscribers
    /// Queued updates were discarded (already counted in `notificationCounts`), with the reason.
    case updatesDropped(Central, count: Int, reason: NotificationQueue.DropReason)
    /// The stack stopped advertising on its own and will not resume it, with its reason.
    case advertisingStopped(reason: String)
    /// A pairing step: a passkey displayed or typed, a comparison confirmed, Just Works authorized.
    case pairing(PairingEvent)
}

/// What a previous run saved for state restoration (Core Bluetooth's `willRestoreState` dictionary): the values
/// centrals wrote and who was subscribed, so an emulator that crashed comes back as the centrals left it.
public struct RestoredState: Hashable, Sendable {
    /// The services that were published (empty when the saver kept only values and subscriptions).
    public var services: [Service]
    /// The last written values, by characteristic id.
    public var values: [String: [UInt8]]
    /// The centrals that were subscribed when the previous run ended, by characteristic id (sorted central ids).
    /// History, not live subscriptions: on BlueZ the stack forgot them when the previous run's application left
    /// (docs/bluez.md), so `subscribedCentrals(of:)` starts empty and each returns as `.subscribed` when its
    /// central writes the CCCD again.
    public var subscriptions: [String: [String]]

    /// Restored state from its parts.
    public init(services: [Service] = [], values: [String: [UInt8]] = [:], subscriptions: [String: [String]] = [:]) {
        self.services = services
        self.values = values
        self.subscriptions = subscriptions
    }
}
