import BlueZModel
import DBus
import GATTModel
import Logging
import Peripheral
import Synchronization

/// The `PeripheralBackend` over bluetoothd's D-Bus API (BlueZ 5.66): exports the GATT application, the
/// advertisement and the pairing agent, registers them on one adapter, turns bluetoothd's calls into
/// `BackendEvent`s, and registers everything again when bluetoothd restarts.
///
/// Notifications follow what bluetoothd does (`NotifyTable`): with 5.66's one `AcquireNotify` per characteristic,
/// or `StartNotify`, every subscriber is one central, `Central.allSubscribersID`, whose MTU is the first
/// subscriber's (later subscribers with a smaller MTU get updates cut by bluetoothd, silently); once bluetoothd
/// shows it acquires a socket per device (5.69+), each device is a central of its own, with its own socket, MTU,
/// back-pressure and confirmations.
public final class BlueZBackend: PeripheralBackend {

    struct State {
        /// bluetoothd, the adapter and what is registered: changed only through `handle(_:)`.
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
    let router = Mutex<RequestRouter?>(nil)

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
        self.router.withLock { $0 = router }
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

    /// Plans the advertisement, exports it and registers it; throws `.invalidAdvertisement` when it cannot be a
    /// legacy advertisement, `.rejected` when bluetoothd refuses (e.g. no free instance).
    public func startAdvertising(_ advertisement: Advertisement) async throws {
        let plan: AdvertisingPlan
        do { plan = try AdvertisingPlanner.plan(advertisement) } catch { throw BlueZError.invalidAdvertisement(error) }
        try await gate.serially { () async throws(BlueZError) in
            await withdrawAdvertisement()
            state.withLock {
                $0.advertisement = plan.registration
                $0.lifecycle.wanted.insert(.advertisement)
            }
            try await registerAdvertisement()
        }
    }

    /// Unregisters and withdraws the advertisement; does nothing when none is registered.
    public func stopAdvertising() async throws {
        await gate.serially { () async in
            await withdrawAdvertisement()
            state.withLock {
                $0.advertisement = nil
                $0.lifecycle.wanted.remove(.advertisement)
            }
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
            await withdrawAdvertisement()
            if state.withLock({ $0.lifecycle.isRegistered(.application) }) {
                await callLogged(
                    adapterPath, BlueZName.Interface.gattManager, BlueZName.Member.unregisterApplication,
                    [.objectPath(paths.root)])
            }
            if state.withLock({ $0.lifecycle.isRegistered(.agent) }) {
                await callLogged(
                    BlueZName.agentManager, BlueZName.Interface.agentManager,
                    BlueZName.Member.unregisterAgent,
                    [.objectPath(paths.agent)])
            }
            if let alias = state.withLock({ $0.previousAlias }) { await setAlias(alias) }
            let (sockets, subscriptions, watcher) = state.withLock { state in
                _ = state.lifecycle.handle(.shutDown)
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

    // MARK: Registration

    /// Replaces the exported tree with `services` and registers it (unregistering the old one first): bluetoothd
    /// cannot extend a registered application (docs/bluez.md, "Registration").
    func applyTree(_ services: [Service]) async throws(BlueZError) {
        guard !state.withLock({ $0.lifecycle.isShutDown }) else { throw .shutDown }
        let root = paths.root
        if state.withLock({ $0.lifecycle.isRegistered(.application) }) {
            await callLogged(
                adapterPath, BlueZName.Interface.gattManager, BlueZName.Member.unregisterApplication,
                [.objectPath(root)])
            handle(.unregistered(.application))
        }
        forgetSubscriptions(reason: "the application is registered again")
        let old = state.withLock { $0.exported }
        for path in old { connection.unexport(path) }
        let objects = GATTApplication.objects(
            for: services, paths: paths, options: options, handlers: handlers())
        do {
            for object in objects { try connection.export(object.path, object.interfaces) }
        } catch {
            for object in objects { connection.unexport(object.path) }
            state.withLock {
                $0.exported = []; $0.services = []
                $0.lifecycle.wanted.remove(.application)
            }
            throw .export("\(error)")
        }
        state.withLock { state in
            state.exported = objects.map(\.path)
            state.services = services
            state.descriptorValues = [:]
            if services.isEmpty {
                state.lifecycle.wanted.remove(.application)
            } else {
                state.lifecycle.wanted.insert(.application)
            }
        }
        try await registerApplication()
    }

    /// `GattManager1.RegisterApplication(root, {})`: bluetoothd calls GetManagedObjects back before answering.
    func registerApplication() async throws(BlueZError) {
        let generation = state.withLock { $0.services.isEmpty ? nil : $0.lifecycle.generation }
        guard let generation, owner.current != nil else { return }
        let root = paths.root
        _ = try await callBlueZ(
            adapterPath, BlueZName.Interface.gattManager, BlueZName.Member.registerApplication,
            [.objectPath(root), .vardict([:])], operation: "RegisterApplication")
        handle(.registered(.application, generation: generation))
        logger.info("registered the GATT application \(root) on \(adapterName)")
    }

    /// Exports the planned advertisement and registers it with `LEAdvertisingManager1`.
    func registerAdvertisement() async throws(BlueZError) {
        let (registration, generation) = state.withLock { ($0.advertisement, $0.lifecycle.generation) }
        guard let registration, owner.current != nil else { return }
        let path = paths.advertisement
        connection.unexport(path)
        do {
            try connection.export(
                path,
                [
                    AdvertisementExport.interface(registration, owner: owner) { [weak self] in
                        self?.advertisementReleased()
                    }
                ])
        } catch { throw .export("\(error)") }
        do {
            _ = try await callBlueZ(
                adapterPath, BlueZName.Interface.advertisingManager, BlueZName.Member.registerAdvertisement,
                [.objectPath(path), .vardict([:])], operation: "RegisterAdvertisement")
        } catch {
            connection.unexport(path)
            throw error
        }
        handle(.registered(.advertisement, generation: generation))
        logger.info("registered the advertisement \(path) on \(adapterName)")
    }

    /// Unregisters (if registered) and unexports the advertisement; failures are logged.
    func withdrawAdvertisement() async {
        let path = paths.advertisement
        if state.withLock({ $0.lifecycle.isRegistered(.advertisement) }) {
            await callLogged(
                adapterPath, BlueZName.Interface.advertisingManager, BlueZName.Member.unregisterAdvertisement,
                [.objectPath(path)])
            handle(.unregistered(.advertisement))
        }
        connection.unexport(path)
    }

    /// 5.66 calls `Release` only when an advertisement's `Timeout` ends (blemu sets none) or when its adapter's
    /// advertising manager goes: the adapter was removed or bluetoothd is exiting (src/advertising.c
    /// `client_timeout`, `manager_destroy`). The registration is kept and made again when the adapter or bluetoothd
    /// returns, so advertising has not stopped for the app: the state changes that follow say what happened.
    private func advertisementReleased() {
        handle(.unregistered(.advertisement))
        logger.warning("bluetoothd released the advertisement (its adapter is going away); registering it again later")
    }

    /// Registers the agent as the default and sets the alias; each failure is logged, not thrown: a machine
    /// without an agent still serves unencrypted attributes.
    func registerAgentAndAlias() async {
        let agent = paths.agent
        let capability = BlueZName.capability(options.pairing.ioCapability)
        let generation = state.withLock { $0.lifecycle.generation }
        do {
            _ = try await callBlueZ(
                BlueZName.agentManager, BlueZName.Interface.agentManager,
                BlueZName.Member.registerAgent,
                [.objectPath(agent), .string(capability)], operation: "RegisterAgent")
            handle(.registered(.agent, generation: generation))
            _ = try await callBlueZ(
                BlueZName.agentManager, BlueZName.Interface.agentManager,
                BlueZName.Member.requestDefaultAgent,
                [.objectPath(agent)], operation: "RequestDefaultAgent")
            logger.info("registered the pairing agent \(agent) (\(capability))")
        } catch {
            logger.warning("pairing agent not registered: \(error)")
        }
        guard let name = options.deviceName else { return }
        if state.withLock({ $0.previousAlias }) == nil {
            do {
                let reply = try await callBlueZ(
                    adapterPath, BlueZName.FreeDesktop.properties, BlueZName.FreeDesktop.get,
                    [.string(BlueZName.Interface.adapter), .string(BlueZName.Property.alias)], operation: "Get Alias")
                if case .variant(.string(let alias))? = reply.first { state.withLock { $0.previousAlias = alias } }
            } catch {
                logger.warning("cannot read the adapter's Alias: \(error)")
            }
        }
        await setAlias(name)
    }

    func setAlias(_ alias: String) async {
        do {
            _ = try await callBlueZ(
                adapterPath, BlueZName.FreeDesktop.properties, BlueZName.FreeDesktop.set,
                [.string(BlueZName.Interface.adapter), .string(BlueZName.Property.alias), .variant(.string(alias))],
                operation: "Set Alias")
            logger.info("adapter \(adapterName) Alias is '\(alias)'")
        } catch {
            logger.warning("cannot set the adapter's Alias: \(error)")
        }
    }

    // MARK: Calls to bluetoothd

    /// Calls bluetoothd; its error replies become `.rejected`, a lost connection `.unavailable`.
    func callBlueZ(
        _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue], operation: String
    ) async throws(BlueZError) -> [DBusValue] {
        do {
            return try await connection.call(
                BlueZName.service, path: path, interface: interface, member: member, arguments: arguments)
        } catch let error as DBusError {
            throw .rejected(operation: operation, error)
        } catch {
            throw .rejected(operation: operation, DBusError(name: StandardErrorName.failed, message: "\(error)"))
        }
    }

    /// A best-effort call (unregistering on the way out): failures are logged at debug level.
    func callLogged(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue]) async {
        do { _ = try await callBlueZ(path, interface, member, arguments, operation: member) } catch {
            logger.debug("\(error)")
        }
    }

    /// The path a published characteristic is exported at.
    func characteristicPath(_ id: String) -> ObjectPath? {
        let services = state.withLock { $0.services }
        for (s, service) in services.enumerated() {
            if let c = service.characteristics.firstIndex(where: { $0.id == id }) {
                return paths.characteristic(c, service: s)
            }
        }
        return nil
    }
}

/// An async mutex: registrations run one at a time, in arrival order, even across their awaits.
actor SerialGate {
    private var isBusy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    private func acquire() async {
        if isBusy {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            isBusy = true
        }
    }

    private func release() {
        if waiters.isEmpty { isBusy = false } else { waiters.removeFirst().resume() }
    }

    /// Runs `body` when every earlier body has finished.
    nonisolated func serially<T>(_ body: () async throws(BlueZError) -> T) async throws(BlueZError) -> T {
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    /// Runs a body that cannot fail when every earlier body has finished.
    nonisolated func serially<T>(_ body: () async -> T) async -> T {
        await acquire()
        let result = await body()
        await release()
        return result
    }
}
