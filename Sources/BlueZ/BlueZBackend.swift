import BlueZAgent
import BlueZModel
import DBus
import GATTModel
import Logging
@_spi(Backend) import Peripheral
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
///
/// One thread of control: the backend is an actor whose executor is its D-Bus connection's loop thread
/// (`BusConnection.unownedExecutor`). bluetoothd's calls, its signals and what happens on the notify and write
/// sockets (`FileWatch`) all arrive on that thread, so they reach this state with `onLoop` and no lock; the
/// async work (registering, shutting down) runs there too, between dispatches. The one thing read from another
/// thread is `routes`, the subscriptions `send(_:to:)` reads on the manager's, behind a lock of their own.
public actor BlueZBackend: PeripheralBackend {
    /// bluetoothd, the adapter and what is registered: changed only through `handle(_:)` and `shutDown()`.
    var lifecycle = BlueZLifecycle(adapterPowered: false)
    /// How many times the adapter's power or presence has been heard of from a signal, so an answer to a question
    /// asked before the latest signal is known to be older than what the machine already has.
    var adapterSignals = 0
    /// The GATT application as exported; `routes` gets each new one, for the characteristics' paths `send` needs.
    var tree = PublishedTree() {
        didSet { routes.withLock { [tree] in $0.tree = tree } }
    }
    var advertisement: AdvertisementRegistration?
    /// Our ends of the `AcquireWrite` sockets (the notify ones are `routes`').
    var writeStreams = WriteStreams()
    /// The adapter's devices: connected, about to disconnect.
    var devices = DeviceTable()
    /// The descriptors' values, with what centrals wrote.
    var descriptors = DescriptorValues()
    var previousAlias: String?
    var subscriptions: [SignalSubscription] = []
    /// Follows bluetoothd's name (`startWatchingOwner`); cancelled at shutdown.
    var watcher: Task<Void, Never>?
    /// Performs the registration jobs one at a time, in order (`startWorker`); awaited at shutdown.
    var worker: Task<Void, Never>?

    /// Everything bluetoothd reports, in order; finishes on `shutdown()`.
    @_spi(Backend) public nonisolated let events: AsyncStream<BackendEvent>

    nonisolated let connection: BusConnection
    nonisolated let adapterPath: ObjectPath
    nonisolated let adapterName: String
    nonisolated let options: BlueZOptions
    nonisolated let paths: ObjectPaths
    nonisolated let logger: Logger
    /// `logger` when it takes debug lines, else nil: the debug lines of requests (reads, writes, streamed writes,
    /// descriptors) ask for the level once, here, not per line (swift-log's `logLevel` copies the handler;
    /// Benchmarks/README.md, "The last route kept").
    nonisolated let requestLogger: Logger?
    nonisolated let owner: OwnerCheck
    nonisolated let continuation: AsyncStream<BackendEvent>.Continuation
    /// The registration jobs, the user's and the lifecycle's, in the order they were asked for: one task, the
    /// worker, performs them, so none overlaps another and none outlives the backend's shutdown.
    nonisolated let jobs: AsyncStream<RegistrationJob.Queued>.Continuation
    /// The manager's router once it attached (`attach(_:)`): every read and write goes to it.
    nonisolated let router: RouterAttachment
    /// Who is subscribed and where each subscription's updates go: the one record, changed on the loop and read by
    /// `send(_:to:)` on the manager's thread, both under this lock.
    nonisolated let routes = Mutex(NotifyRoutes())
    /// Device paths bluetoothd named in requests and subscriptions (the `device` option): the centrals met so far,
    /// for `disconnect` when bluetoothd's object tree cannot be read. Behind a lock of its own, not the actor's
    /// isolation: every request adds to it on the loop thread, where checking the executor cost more than the
    /// insert (Benchmarks/README.md, "Answering without a task"). `last` is the last request's device, whatever it
    /// was: nearly every request names the device before it, and comparing costs a tenth of hashing into `all`.
    nonisolated let namedDevices = Mutex<(all: Set<String>, last: String)>(([], ""))

    /// Runs on the D-Bus loop thread: see the type's comment.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { connection.unownedExecutor }

    /// Connects to `bus`, checks that bluetoothd and `adapter` are there, exports the agent and sets the alias.
    /// Throws `.unavailable` when the bus, bluetoothd or the adapter is missing (the CLI exits 69). `logger`'s level
    /// is read once, here, for the requests' debug lines.
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
        requestLogger = logger.logLevel <= .debug ? logger : nil
        self.owner = OwnerCheck(owner: bluetoothd, logger: logger)
        self.router = RouterAttachment(logger: logger)
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        let (queue, jobs) = AsyncStream<RegistrationJob.Queued>.makeStream()
        self.jobs = jobs

        guard let powered = await adapterPowered() else {
            connection.close()
            throw .unavailable("bluetoothd has no adapter \(adapter)")
        }
        lifecycle = BlueZLifecycle(adapterPowered: powered)
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
        startWorker(queue)
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
    @_spi(Backend) public nonisolated func attach(_ router: RequestRouter) {
        self.router.attach(router)
    }

    /// Exports the tree with `service` added and registers the application again; throws `BlueZError`.
    @_spi(Backend) public func publish(_ service: Service) async throws {
        try await enqueue(.publish(service)).get()
    }

    /// Exports the tree without `service` and registers what remains; throws `BlueZError`.
    @_spi(Backend) public func unpublish(_ service: Service) async throws {
        try await enqueue(.unpublish(id: service.id)).get()
    }

    /// Plans the advertisement, exports it and registers it; throws `.invalidAdvertisement` when it cannot be laid
    /// out, `.extendedAdvertisingUnavailable` when it is extended and this bluetoothd or controller cannot send it,
    /// `.rejected` when bluetoothd refuses (e.g. no free instance), `.shutDown` after `shutdown()`.
    @_spi(Backend) public func startAdvertising(_ advertisement: Advertisement) async throws {
        let plan: AdvertisingPlan
        do { plan = try AdvertisingPlanner.plan(advertisement) } catch { throw BlueZError.invalidAdvertisement(error) }
        try await enqueue(.startAdvertising(plan, advertisement)).get()
    }

    /// Unregisters and withdraws the advertisement; does nothing when none is registered, or after shutdown.
    @_spi(Backend) public func stopAdvertising() async throws {
        _ = await enqueue(.stopAdvertising)
    }

    /// Writes one datagram to the characteristic's notify socket, or emits `PropertiesChanged(Value)`; `.failed`
    /// when nobody subscribed the characteristic. Called on the manager's thread: it reads `routes` under its lock
    /// (released before the write), and writes on a socket or the bus, both of which any thread may do.
    @_spi(Backend) public nonisolated func send(_ update: NotificationQueue.Update, to central: Central) -> SendOutcome
    {
        switch routes.withLock({ $0.route(update.characteristicID, to: central) }) {
        case .none(let reason):
            return .failed(reason)
        case .socket(let socket):
            return socket.send(update.bytes)
        case .properties(let objectPath):
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
        // A second call finds the queue finished and returns at once; both wait for the worker's last job.
        _ = await enqueue(.shutDown)
        await worker?.value
    }

    // MARK: One registration at a time

    /// Queues `job` for the worker and waits until it has been performed; `.shutDown` when the backend ended before
    /// it could be queued. Never called by a job itself: the worker would wait on its own queue.
    func enqueue(_ job: RegistrationJob) async -> Result<Void, BlueZError> {
        await withCheckedContinuation { reply in
            if case .terminated = jobs.yield(RegistrationJob.Queued(job: job, reply: reply)) {
                reply.resume(returning: .failure(.shutDown))
            }
        }
    }

    /// Starts the one task that performs the queued jobs in order; it ends once `shutdown` finished the queue and
    /// the jobs already in it have been answered, and holds the backend only while it performs one.
    func startWorker(_ queue: AsyncStream<RegistrationJob.Queued>) {
        worker = Task { [weak self] in
            for await queued in queue {
                guard let self else {
                    queued.reply?.resume(returning: .failure(.shutDown))
                    continue
                }
                let outcome = await self.run(queued.job)
                queued.reply?.resume(returning: outcome)
            }
        }
    }

    /// Performs one job; the worker calls it, and only the worker.
    private func run(_ job: RegistrationJob) async -> Result<Void, BlueZError> {
        do throws(BlueZError) {
            switch job {
            case .publish(let service): try await applyTree(tree.services + [service])
            case .unpublish(let id): try await applyTree(tree.services.filter { $0.id != id })
            case .startAdvertising(let plan, let advertisement): try await advertise(plan, advertisement)
            case .stopAdvertising:
                await withdrawAdvertisement()
                self.advertisement = nil
                handle(.unwant(.advertisement))
            case .registerAgain(let reason): await registerAgain(reason: reason)
            case .refreshAdvertisement: await registerAdvertisementAfterPowerOn()
            case .shutDown: await endRegistrations()
            }
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// Withdraws the advertisement and registers `plan`'s, first planned again for the adapter when extended.
    private func advertise(_ plan: AdvertisingPlan, _ advertisement: Advertisement) async throws(BlueZError) {
        guard !lifecycle.isShutDown else { throw .shutDown }
        await withdrawAdvertisement()
        var plan = plan
        if plan.mode == .extended { plan = try await planExtended(advertisement) }
        self.advertisement = plan.registration
        handle(.want(.advertisement))
        do throws(BlueZError) {
            try await registerAdvertisement()
        } catch .rejected(let operation, let error) where plan.mode == .extended {
            self.advertisement = nil
            handle(.unwant(.advertisement))
            throw Self.extendedRefusal(plan, operation: operation, error)
        }
    }

    /// The shutdown job: unregisters in reverse order, closes every socket, finishes `events` and the queue (the
    /// jobs still in it are performed and find the backend shut down), and closes the connection.
    private func endRegistrations() async {
        guard !lifecycle.isShutDown else { return }
        // From here the machine ignores bluetoothd: a restart meanwhile registers nothing again, and the jobs still
        // queued find nothing to do.
        for registration in lifecycle.shutDown() { await unregister(registration) }
        jobs.finish()
        connection.unexport(paths.advertisement)
        if let previousAlias { await setAlias(previousAlias) }
        let closing = routes.withLock { $0.removeAll() } + writeStreams.removeWrites().map(\.socket)
        for socket in closing { socket.close() }
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()
        watcher?.cancel()
        watcher = nil
        logger.info("unregistered from bluetoothd")
        continuation.finish()
        connection.close()
    }
}

extension BlueZBackend {
    /// Runs `body` with the backend's state, from code on the D-Bus loop that is no Swift job: bluetoothd's calls,
    /// the signals it sends, the sockets' events. `assumeIsolated`, which asks the connection's executor
    /// (`isIsolatingCurrentContext`, a thread id compare) and traps off the loop; measured at 0.1-0.5% of a
    /// request's instructions (Benchmarks/README.md, "Instructions per request").
    nonisolated func onLoop<T: Sendable>(_ body: (isolated BlueZBackend) throws -> T) rethrows -> T {
        try assumeIsolated(body)
    }
}
