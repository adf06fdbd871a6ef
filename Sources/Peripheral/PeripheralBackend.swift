import GATTModel

/// What `PeripheralManager` needs from a Bluetooth stack (BlueZ over D-Bus, or `InMemoryBackend` in tests).
///
/// An app hands a backend to the manager and talks to the manager only; the requirements, and the types they use
/// (`RequestRouter`, `IncomingRead`, `IncomingWrites`, `BackendEvent`, `SendOutcome`, `UpdateKind`), are for a
/// stack's author, behind `@_spi(Backend) import Peripheral`: they are not the Core Bluetooth-shaped API.
///
/// The manager attaches its `RequestRouter` first (`attach(_:)`); the stack hands every read and write to it, on
/// the thread the request arrived on, and the router answers each exactly once through the `reply` closure the
/// request carries. Everything else the stack reports through `events`, which exactly one manager consumes. The
/// manager sends updates with `send(_:to:)` from its own bounded queue, and drives publishing and advertising with
/// the async methods.
///
/// Fitting BlueZ (docs/bluez.md):
/// - `ReadValue`/`WriteValue` become `IncomingRead`/`IncomingWrites` handed to the router, whose `reply` sends the
///   D-Bus reply; a no-reply `WriteValue` (write-without-response) gets `reply: nil` and is never answered;
///   `prepare-authorize: true` sets `isAuthorizationOnly` (5.66 sends it with no bytes; see `WriteRequests` for what reaches the app of a
///   long or reliable write).
/// - Map answers with `dbus_error_to_att_ecode()` in mind: 0x02/0x03 -> `NotPermitted`, 0x06 -> `NotSupported`,
///   0x07 -> `InvalidOffset`, 0x08 -> `NotAuthorized`, 0x0D -> `InvalidValueLength`, 0xFD/0xFE -> their names,
///   0x80-0x9F -> `Failed` with message `"0x80"`..; other codes cannot be expressed and arrive as 0x0E or 0x80.
///   0x05/0x0F come from the static `encrypt-*` flags, before bluetoothd ever calls the app.
/// - A subscription names the central its updates reach: one device only when the stack delivers to that device
///   alone. BlueZ's `AcquireNotify` carries a `device` option, but 5.66-5.68 acquire one socket per characteristic
///   whose datagrams reach every subscriber, so the BlueZ backend reports one central standing for them all
///   (`Central.allSubscribersID`, defined in the BlueZ module) until bluetoothd shows per-device sockets (5.69+),
///   then each device (BlueZ's `NotifyTable`). Socket writability after `EAGAIN` is `.writable`; byte 0x01 on it is
///   `.confirmed`; its closing is `.unsubscribed`. `StartNotify` (no device) also subscribes that central, served
///   with `PropertiesChanged`, and `Confirm()` confirms for it.
public protocol PeripheralBackend: Sendable {
    /// Called once by the manager, in its `init`, before it consumes `events`: from then on hand every read and
    /// write to `router.read(_:)`/`router.write(_:)` on the thread it arrived on.
    @_spi(Backend) func attach(_ router: RequestRouter)

    /// Everything the stack reports, in order: state, connections, subscriptions, confirmations,
    /// writability. Yield `.stateChanged` first. Finish the stream when the backend shuts down: the manager stops.
    @_spi(Backend) var events: AsyncStream<BackendEvent> { get }

    /// Publishes a service (BlueZ: export its objects and register the application); throws when the stack refuses.
    /// The manager has already checked ids and state.
    @_spi(Backend) func publish(_ service: Service) async throws
    /// Withdraws a published service (BlueZ: unregister, export the rest, register again); throws on failure.
    @_spi(Backend) func unpublish(_ service: Service) async throws
    /// Starts advertising (BlueZ: plan the AD bytes, then `RegisterAdvertisement`); throws when refused or when the
    /// advertisement cannot be laid out within the legacy budget.
    @_spi(Backend) func startAdvertising(_ advertisement: Advertisement) async throws
    /// Stops advertising; throws when the stack fails (not when nothing was advertised).
    @_spi(Backend) func stopAdvertising() async throws

    /// Drops links: `central`'s, or every connected central's when nil (BlueZ: `Device1.Disconnect` on each
    /// connected device of the adapter). Returns the ids of the centrals it disconnected, each also reported as
    /// `.disconnected` once the stack sees the link go. A central that is not connected is not an error; throws
    /// when the stack fails.
    @_spi(Backend) func disconnect(_ central: Central?) async throws -> [String]

    /// Sends one update to one central now, without blocking and without queueing (the manager queues):
    /// `.sent` when the stack took it, `.wouldBlock` when it cannot take it yet (then yield `.writable(central)`
    /// later), `.failed` when it never will (unknown central, closed socket). BlueZ: write one datagram to the
    /// central's `AcquireNotify` socket; for the all-subscribers central, emit `PropertiesChanged` and return `.sent`.
    /// Called on the manager's actor: it must return quickly.
    @_spi(Backend) func send(_ update: NotificationQueue.Update, to central: Central) -> SendOutcome
}

/// What happened to an update handed to `PeripheralBackend.send(_:to:)`.
@_spi(Backend) public enum SendOutcome: Hashable, Sendable {
    /// The stack took it (for an indication: the confirmation comes later as `.confirmed`).
    case sent
    /// Not now (a full socket): the manager keeps it and waits for `.writable(central)`.
    case wouldBlock
    /// Never: the manager drops it, counts it and logs the reason.
    case failed(String)
}

/// Whether a subscription asked for notifications or indications.
@_spi(Backend) public enum UpdateKind: String, Hashable, Sendable {
    /// Unacknowledged updates.
    case notification
    /// Updates the central confirms, one at a time.
    case indication
}
