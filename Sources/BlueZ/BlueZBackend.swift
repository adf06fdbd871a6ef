import BlueZModel
import DBus
import GATTModel
import Logging
import Peripheral
import Synchronization

/// The `PeripheralBackend` over bluetoothd's D-Bus API (BlueZ 5.66): exports the GATT application, the
/// advertisement and the pairing agent, registers them on one adapter, turns bluetoothd's calls into
/// requests for the manager's router and `BackendEvent`s, and registers everything again when bluetoothd
/// restarts (`BlueZLifecycle`).
///
/// Notifications follow what bluetoothd does (`NotifyTable`): with 5.66's one `AcquireNotify` per characteristic,
/// or `StartNotify`, every subscriber is one central, `Central.allSubscribersID`, whose MTU is the first
/// subscriber's (later subscribers with a smaller MTU get updates cut by bluetoothd, silently); once bluetoothd
/// shows it acquires a socket per device (5.69+), each device is a central of its own, with its own socket, MTU,
/// back-pressure and confirmations.
public final class BlueZBackend: PeripheralBackend {

    struct State {
        /// bluetoothd, the adapter and what is registered: changed only through `handle(_:)` and `shutDown()`.
        var lifecycle = BlueZLifecycle(adapterPowered: false)
        var services: [Service] = []
        var exported: [ObjectPath] = []
        var advertisement: AdvertisementRegistration?
        /// Who each subscribed characteristic's updates reach.
        var notify = NotifyTable()
        /// Our ends of the `AcquireNotify` sockets, by the token `notify` knows them by.
        var notifySockets: [Int: AcquiredSocket] = [:]
        /// The next socket's token.
        var nextNotifyToken = 0
        /// AcquireWrite sockets by characteristic id.
        var writeStreams: [String: AcquiredSocket] = [:]
        /// The adapter's devices whose `Connected` is true, each reported once as a central.
        var connectedDevices: Set<ObjectPath> = []
        /// Why a device's link went down, from `Device1.Disconnected` (5.83+), until its `Connected` turns false.
        var disconnectReasons: [ObjectPath: DisconnectReason] = [:]
        var descriptorValues: [ObjectPath: [UInt8]] = [:]
        var previousAlias: String?
        /// Device paths bluetoothd named in requests and subscriptions (the `device` option): the centrals we know.
        var knownDevices: Set<String> = []
        var subscriptions: [SignalSubscription] = []
        var watcher: Task<Void, Never>?
    }

    /// Everything bluetoothd reports, in order; finishes on `shutdown()`.
    public let events: AsyncStream<BackendEvent>

    let connection: BusConnection
    let adapterPath: ObjectPath
    let adapterName: String
    let options: BlueZOptions
    let paths: ObjectPaths
    let logger: Logger
    let owner: OwnerCheck
    let state: Mutex<State>
    let continuation: AsyncStream<BackendEvent>.Continuation
    /// Serialises registrations (publish, advertise, re-registration after a restart, shutdown).
    let gate = SerialGate()
    /// The manager's router once it attached (`attach(_:)`): every read and write goes to it.
    let router: RouterAttachment

    /// Connects to `bus`, checks that bluetoothd and `adapter` are there, exports the agent and sets the alias.
    /// Throws `.unavailable` when the bus, bluetoothd or the adapter is missing (the CLI exits 69).
    public init(
        bus: BusAddress, adapter: String = "hci0", options: BlueZOptions = BlueZOptions(), logger: Logger
    ) async throws(BlueZError) {
        let connection: BusConnection
        do {
            connection = try BusConnection(bus, logger: logger)
        } catch {
            throw .unavailable("cannot connect to the \(bus) bus: \(error)")
        }
        guard let adapterPath = try? ObjectPath(validating: "/org/bluez/\(adapter)") else {
            connection.close()
            throw .unavailable("'\(adapter)' is not an adapter name (expected e.g. hci0)")
        }
        let bluetoothd: String?
        do { bluetoothd = try await connection.nameOwner(BlueZName.service) } catch {
            connection.close()
            throw .unavailable("cannot ask the bus for \(BlueZName.service): \(error)")
        }
        guard let bluetoothd else {
            connection.close()
            throw .unavailable("bluetoothd (\(BlueZName.service)) is not on the \(bus) bus")
        }
        self.connection = connection
        self.adapterPath = adapterPath
        self.adapterName = adapter
        self.options = options
        self.paths = ObjectPaths(instance: options.instance)
        self.logger = logger
        self.owner = OwnerCheck(owner: bluetoothd, logger: logger)
        self.router = RouterAttachment(logger: logger)
        self.state = Mutex(State())
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)

        guard let powered = await adapterPowered() else {
            connection.close()
            throw .unavailable("bluetoothd has no adapter \(adapter)")
        }
        state.withLock { $0.lifecycle = BlueZLifecycle(adapterPowered: powered) }
        do {
            try connection.addObjectManager(at: paths.root)
            try connection.export(
                paths.agent,
                [
                    PairingAgent.interface(
                        options.pairing, owner: owner, logger: logger,
                        report: { [continuation] in continuation.yield(.pairing($0)) })
                ])
        } catch {
            connection.close()
            throw .export("\(error)")
        }
        await watchAdapter()
        await watchDevices()
        await registerAgentAndAlias()
        startWatchingOwner()
        logger.info("using \(adapter) of bluetoothd \(bluetoothd), powered \(powered ? "on" : "off")")
        continuation.yield(.stateChanged(powered ? .poweredOn : .poweredOff))
    }

    deinit { connection.close() }

    // MARK: PeripheralBackend

    /// Keeps the manager's router: `ReadValue`, `WriteValue` and `AcquireWrite` datagrams go to it on the loop thread.
    public func attach(_ router: RequestRouter) {
        self.router.attach(router)
    }

    /// Exports the tree with `service` added and registers the application again; throws `BlueZError`.
    public func publish(_ service: Service) async throws {
        try await gate.serially { () async throws(BlueZError) in
            let services = state.withLock { $0.services } + [service]
            try await applyTree(services)
        }
    }

    /// Exports the tree without `service` and registers what remains; throws `BlueZError`.
    public func unpublish(_ service: Service) async throws {
        try await gate.serially { () async throws(BlueZError) in
            let services = state.withLock { $0.services }.filter { $0.id != service.id }
            try await applyTree(services)
        }
    }

    /// Plans the advertisement, exports it and registers it; throws `.invalidAdvertisement` when it cannot be laid
    /// out, `.extendedAdvertisingUnavailable` when it is extended and this bluetoothd or controller cannot send it,
    /// `.rejected` when bluetoothd refuses (e.g. no free instance).
    public func startAdvertising(_ advertisement: Advertisement) async throws {
        var plan: AdvertisingPlan
        do { plan = try AdvertisingPlanner.plan(advertisement) } catch { throw BlueZError.invalidAdvertisement(error) }
        try await gate.serially { () async throws(BlueZError) in
            await withdrawAdvertisement()
            if plan.mode == .extended { plan = try await planExtended(advertisement) }
            state.withLock { $0.advertisement = plan.registration }
            handle(.want(.advertisement))
            do throws(BlueZError) {
                try await registerAdvertisement()
            } catch .rejected(let operation, let error) where plan.mode == .extended {
                state.withLock { $0.advertisement = nil }
                handle(.unwant(.advertisement))
                throw Self.extendedRefusal(plan, operation: operation, error)
            }
        }
    }

    /// Unregisters and withdraws the advertisement; does nothing when none is registered.
    public func stopAdvertising() async throws {
        await gate.serially { () async in
            await withdrawAdvertisement()
            state.withLock { $0.advertisement = nil }
            handle(.unwant(.advertisement))
        }
    }

    /// Writes one datagram to the characteristic's notify socket, or emits `PropertiesChanged(Value)`; `.failed`
    /// when nobody subscribed the characteristic.
    public func send(_ update: NotificationQueue.Update, to central: Central) -> SendOutcome {
        let (route, socket) = state.withLock { state -> (NotifyTable.Route, AcquiredSocket?) in
            let route = state.notify.route(update.characteristicID, to: central)
            guard case .socket(let token) = route else { return (route, nil) }
            return (route, state.notifySockets[token])
        }
        switch route {
        case .none(let reason):
            return .failed(reason)
        case .socket:
            guard let socket else { return .failed("the notify socket of \(update.characteristicID) is closed") }
            return socket.send(update.bytes)
        case .properties:
            guard let objectPath = characteristicPath(update.characteristicID) else {
                return .failed("\(update.characteristicID) is not published")
            }
            do {
                try connection.emitPropertiesChanged(
                    path: objectPath, interface: BlueZName.Interface.gattCharacteristic,
                    changed: [BlueZName.Property.value: .bytes(update.bytes)])
                return .sent
            } catch {
                return .failed("PropertiesChanged not sent: \(error)")
            }
        }
    }

    /// Unregisters the advertisement, the application and the agent, restores the alias, finishes `events` and
    /// closes the connection. Failures are logged (bluetoothd may be gone already); safe to call twice.
    public func shutdown() async {
        await gate.serially { () async in
            guard !state.withLock({ $0.lifecycle.isShutDown }) else { return }
            // From here the machine ignores bluetoothd: a restart meanwhile registers nothing again.
            for registration in state.withLock({ $0.lifecycle.shutDown() }) { await unregister(registration) }
            connection.unexport(paths.advertisement)
            if let alias = state.withLock({ $0.previousAlias }) { await setAlias(alias) }
            let (sockets, subscriptions, watcher) = state.withLock { state in
                _ = state.notify.removeAll()
                let sockets = Array(state.notifySockets.values)
                state.notifySockets.removeAll()
                let streams = Array(state.writeStreams.values)
                state.writeStreams.removeAll()
                defer { state.subscriptions.removeAll(); state.watcher = nil }
                return (sockets + streams, state.subscriptions, state.watcher)
            }
            for socket in sockets { socket.close() }
            for subscription in subscriptions { subscription.cancel() }
            watcher?.cancel()
            logger.info("unregistered from bluetoothd")
            continuation.finish()
            connection.close()
        }
    }
}
