import GATTModel

/// What a stack reports to the manager, in order. Reads and writes are not events: the stack hands them to the
/// `RequestRouter` it was attached to (`PeripheralBackend.attach(_:)`), on the thread they arrive on.
@_spi(Backend) public enum BackendEvent: Sendable {
    /// The adapter's state changed (BlueZ: `Powered`, bluetoothd appearing or vanishing).
    case stateChanged(PeripheralManagerState)
    /// A central connected, or its link changed (a new MTU): the `Central` carries the new limit.
    case connected(Central)
    /// A central disconnected, with the stack's reason when it gives one: the manager drops its queue (counted) and
    /// ends its subscriptions.
    case disconnected(Central, reason: DisconnectReason?)
    /// A central subscribed to a characteristic: the device, or one central standing for every subscriber when the
    /// stack's updates reach them all at once (BlueZ: `Central.allSubscribersID`; see `PeripheralBackend`). The
    /// stack has already checked the CCCD's security.
    case subscribed(Central, characteristicID: String, kind: UpdateKind)
    /// A central unsubscribed (BlueZ: the notify socket closed, or `StopNotify`).
    case unsubscribed(Central, characteristicID: String)
    /// A central confirmed the indication in flight (BlueZ: byte 0x01 on the socket, or `Confirm()`).
    case confirmed(Central)
    /// The stack can take updates for this central again after `.wouldBlock` (BlueZ: the socket is writable).
    case writable(Central)
    /// The stack stopped advertising on its own and will not resume it (BlueZ: the advertisement could not be
    /// registered again after a power cycle; a `Release()` while the adapter goes away is not this).
    case advertisingStopped(reason: String)
    /// The stack asked the peripheral's side of a pairing something (BlueZ: an `Agent1` call), and its answer.
    case pairing(PairingEvent)
}
