import GATTModel
import Logging
import Waiting

/// A Bluetooth LE peripheral: Core Bluetooth's `CBPeripheralManager`, over any `PeripheralBackend`.
///
/// Publish services, advertise, and push values with `updateValue(_:for:onSubscribedCentrals:)`; requests go to
/// the `RequestHandler` (by default a `ProfileServer`) through the `RequestRouter` the backend is attached to,
/// everything else comes out of `events`.
public actor PeripheralManager {
    /// Limits and timings.
    public struct Configuration: Sendable {
        /// How long a handler has to answer before the engine answers `deadlineError`: under the stack's own
        /// timeout, so the central gets the engine's answer (BlueZ answers an application's read or write itself
        /// after 5 s, and crashes when the link went down meanwhile: docs/bluez.md, "Requests answered late"), and
        /// well under ATT's 30 s transaction timeout (Core Spec Vol 3, Part F, 3.3.3).
        public var requestDeadline: Duration
        /// What the engine answers when the deadline passes.
        public var deadlineError: ATTError
        /// How many updates may wait per central before `updateValue` returns false.
        public var queueCapacity: Int

        /// A configuration; the defaults leave a handler 4.5 s and queue 16 updates per central.
        public init(
            requestDeadline: Duration = .milliseconds(4500), deadlineError: ATTError = .unlikelyError,
            queueCapacity: Int = 16
        ) {
            self.requestDeadline = requestDeadline
            self.deadlineError = deadlineError
            self.queueCapacity = queueCapacity
        }
    }

    /// What happens, in order; one consumer. Unbounded, so nothing is lost when nobody listens for a while.
    public nonisolated let events: AsyncStream<PeripheralEvent>
    /// The latest state the stack reported.
    public private(set) var state: PeripheralManagerState = .unknown
    /// Whether the advertisement is on the air: started, not stopped, and the stack powered on.
    public var isAdvertising: Bool { advertising == .started(onAir: true) }
    /// Advertising as the app asked and the stack allows, in one value: "on the air but never started" cannot be.
    private var advertising = Advertising.stopped

    /// Where advertising is. The backend keeps the registration across power cycles and registers it again after a
    /// bluetoothd restart (docs/bluez.md, "Links, power and restarts"), so a started advertisement is back on the
    /// air whenever the state returns to `.poweredOn`.
    private enum Advertising: Equatable {
        /// Never started, or stopped by the app or by the stack.
        case stopped
        /// Started and not stopped since: on the air while the stack is powered on.
        case started(onAir: Bool)
    }
    /// The published services, in publication order.
    public private(set) var services: [Service] = []
    /// The connected centrals, with their current limits.
    public var connectedCentrals: [Central] { Array(centrals.values).sorted { $0.id < $1.id } }
    /// What became of the values given to `updateValue`: accepted, queued, sent, confirmed, dropped, truncated.
    public var notificationCounts: NotificationCounts {
        var counts = queue.statistics
        counts.accepted = updatesAccepted
        counts.withoutSubscribers = updatesWithoutSubscribers
        return counts
    }
    /// Requests received and how each was answered: `requests == answered` once all are answered.
    public nonisolated var requestCounts: RequestCounts { ledger.snapshot }
    /// True as soon as the request counts satisfy `condition` (checked now, then at each request and answer); false
    /// if they did not within `limit`, or when the caller is cancelled. Waits for "every request answered" instead of
    /// polling, in tests and at shutdown.
    public nonisolated func requestCounts(
        within limit: Duration, satisfying condition: @escaping @Sendable (RequestCounts) -> Bool
    ) async -> Bool {
        await ledger.wait(within: limit, until: condition)
    }

    /// True as soon as the notification counts satisfy `condition` (checked now, then each time the queue moves);
    /// false if they did not within `limit`, or when the caller is cancelled. For tests: wait for "five indications
    /// confirmed" instead of polling.
    public func notificationCounts(
        within limit: Duration, satisfying condition: @escaping @Sendable (NotificationCounts) -> Bool
    ) async -> Bool {
        await countChanges.until(within: limit) { condition(notificationCounts) }
    }

    private let backend: any PeripheralBackend
    private let configuration: Configuration
    private let logger: Logger
    private let ledger: RequestLedger
    /// Hands requests to the handler; kept in step with `characteristics`.
    private let router: RequestRouter
    private let continuation: AsyncStream<PeripheralEvent>.Continuation
    private var queue: NotificationQueue
    private var characteristics: [String: Characteristic] = [:]
    private var centrals: [String: Central] = [:]
    /// Subscribers by characteristic id, then central id.
    private var subscriptions: [String: [String: (central: Central, kind: UpdateKind)]] = [:]
    /// Rung each time the notification queue moves, for `notificationCounts(within:satisfying:)`.
    private let countChanges = ChangeSignal()
    private var stateWaiters: [CheckedContinuation<PeripheralManagerState, Never>] = []

    /// A manager that starts consuming the backend's events at once and hands requests to `handler`; it lives until
    /// the backend finishes its event stream, even when the caller lets go of it. With `restoring`, the first event
    /// is `.willRestoreState` carrying it, before any state change (as Core Bluetooth orders them). Request
    /// deadlines run on `clock` (tests pass a manual one and advance it).
    public init(
        backend: any PeripheralBackend, handler: any RequestHandler = ProfileServer(),
        configuration: Configuration = Configuration(),
        restoring restoredState: RestoredState? = nil,
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "blemu.peripheral")
    ) {
        self.backend = backend
        self.configuration = configuration
        self.logger = logger
        let ledger = RequestLedger()
        self.ledger = ledger
        router = RequestRouter(
            handler: handler, ledger: ledger, deadline: configuration.requestDeadline,
            deadlineError: configuration.deadlineError, clock: ElapsedClock(clock), logger: logger)
        self.queue = NotificationQueue(capacity: configuration.queueCapacity)
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        // Yielded before the event loop exists, so no state change can overtake it.
        if let restoredState { continuation.yield(.willRestoreState(restoredState)) }
        let incoming = backend.events
        // Requests skip the event stream and this actor: they need nothing the actor guards.
        backend.attach(router)
        // The loop holds the manager strongly: it runs as long as the stack reports events, so that a request
        // never waits for a manager nobody holds any more. It ends when the backend finishes its stream.
        Task {
            for await event in incoming { await self.handle(event) }
            await self.backendFinished()
        }
    }

    /// Waits until the state is `.poweredOn`; throws `.unavailable` when it is unsupported or unauthorized.
    public func waitUntilPoweredOn() async throws(PeripheralError) {
        while true {
            switch state {
            case .poweredOn: return
            case .unsupported, .unauthorized: throw .unavailable(state)
            default: _ = await withCheckedContinuation { stateWaiters.append($0) }
            }
        }
    }

    // MARK: Services

    /// Publishes a service; it cannot change afterwards (remove and publish again). Throws when not powered on,
    /// when its id or a characteristic id is already published, or when the stack refuses.
    public func publish(_ service: Service) async throws(PeripheralError) {
        guard state == .poweredOn else { throw .notPoweredOn(state) }
        guard !services.contains(where: { $0.id == service.id }) else { throw .alreadyPublished(serviceID: service.id) }
        var seen = Set<String>()
        for characteristic in service.characteristics {
            guard characteristics[characteristic.id] == nil, seen.insert(characteristic.id).inserted else {
                throw .duplicateCharacteristicID(characteristic.id)
            }
        }
        do { try await backend.publish(service) } catch { throw .backendFailed(BackendFailure(error)) }
        // Checked again after the await: another publish may have raced in while the stack worked.
        guard !services.contains(where: { $0.id == service.id }) else { throw .alreadyPublished(serviceID: service.id) }
        services.append(service)
        for characteristic in service.characteristics { characteristics[characteristic.id] = characteristic }
        router.publish(service.characteristics)
        let count = service.characteristics.count
        logger.info("published service \(service.id) (\(service.uuid)), \(count) characteristics")
    }

    /// Withdraws a published service; its subscriptions end. Throws when it is not published or the stack fails.
    public func remove(_ service: Service) async throws(PeripheralError) {
        guard let published = services.first(where: { $0.id == service.id }) else {
            throw .notPublished(serviceID: service.id)
        }
        do { try await backend.unpublish(published) } catch { throw .backendFailed(BackendFailure(error)) }
        services.removeAll { $0.id == published.id }
        router.remove(published.characteristics.map(\.id))
        for characteristic in published.characteristics {
            characteristics[characteristic.id] = nil
            for (_, subscriber) in subscriptions.removeValue(forKey: characteristic.id) ?? [:] {
                queue.unsubscribed(subscriber.central, from: characteristic.id)
                continuation.yield(.unsubscribed(subscriber.central, characteristic))
            }
        }
        drain()
        logger.info("removed service \(published.id)")
    }

    /// Withdraws every published service; throws the first failure.
    public func removeAllServices() async throws(PeripheralError) {
        for service in services { try await remove(service) }
    }

    // MARK: Advertising

    /// Starts advertising; throws when not powered on or when the stack refuses (or cannot lay it out).
    public func startAdvertising(_ advertisement: Advertisement) async throws(PeripheralError) {
        guard state == .poweredOn else { throw .notPoweredOn(state) }
        do { try await backend.startAdvertising(advertisement) } catch { throw .backendFailed(BackendFailure(error)) }
        advertising = .started(onAir: true)
        logger.info("advertising \(advertisement.localName ?? "(no name)")")
    }

    /// Stops advertising; throws when the stack fails.
    public func stopAdvertising() async throws(PeripheralError) {
        do { try await backend.stopAdvertising() } catch { throw .backendFailed(BackendFailure(error)) }
        advertising = .stopped
    }

    // MARK: Links

    /// Drops `central`'s link, or every connected central's when nil. Core Bluetooth's peripheral cannot hang up;
    /// an emulator needs it for its `disconnect` fault. Returns the ids of the centrals disconnected (the stack then
    /// reports each as `.centralDisconnected`); throws `.backendFailed` when the stack fails.
    @discardableResult
    public func disconnect(_ central: Central? = nil) async throws(PeripheralError) -> [String] {
        let ids: [String]
        do { ids = try await backend.disconnect(central) } catch { throw .backendFailed(BackendFailure(error)) }
        logger.info("disconnected \(ids.isEmpty ? "no central" : ids.joined(separator: ", "))")
        return ids
    }

    // MARK: Updates

    /// `NotificationCounts.accepted` and `.withoutSubscribers`: counted here, where `updateValue` decides them.
    private var updatesAccepted = 0
    private var updatesWithoutSubscribers = 0

    /// Sends a value to the subscribed centrals (all of them, or those of `centrals` that subscribed), as a
    /// notification or indication per subscription, cut to each central's `maximumUpdateValueLength`.
    ///
    /// Returns false, sending to nobody, when a target's queue is full: `.readyToUpdateSubscribers` follows when
    /// it has room, then call again. Returns true when queued, also when nobody is subscribed (nothing to do);
    /// an unpublished characteristic is logged as misuse and returns true (no retry would help).
    public func updateValue(
        _ value: [UInt8], for characteristic: Characteristic, onSubscribedCentrals centrals: [Central]? = nil
    ) -> Bool {
        guard characteristics[characteristic.id] != nil else {
            logger.error("updateValue for \(characteristic.id), which is not published: ignored")
            return true
        }
        let wanted = centrals.map { Set($0.map(\.id)) }
        let targets = (subscriptions[characteristic.id] ?? [:]).values
            .filter { wanted?.contains($0.central.id) ?? true }
            .sorted { $0.central.id < $1.central.id }
            .map { (central: self.centrals[$0.central.id] ?? $0.central, isIndication: $0.kind == .indication) }
        guard !targets.isEmpty else {
            // Reaches no central: nobody subscribed, or a central whose CCCD write bluetoothd has acknowledged but
            // not yet turned into an AcquireNotify (docs/bluez.md, Notifications). Counted, never "sent".
            updatesAccepted += 1
            updatesWithoutSubscribers += 1
            countChanges.changed()
            return true
        }
        switch queue.enqueue(value, characteristicID: characteristic.id, to: targets) {
        case .full(let full):
            logger.debug("updateValue for \(characteristic.id): queue full for \(full.map(\.id))")
            countChanges.changed()
            return false
        case .enqueued(let truncated):
            updatesAccepted += 1
            for central in truncated {
                let limit = central.maximumUpdateValueLength
                logger.debug("update of \(characteristic.id) cut to \(limit) bytes for \(central)")
            }
            drain()
            return true
        }
    }

    /// The centrals subscribed to a characteristic.
    public func subscribedCentrals(of characteristic: Characteristic) -> [Central] {
        (subscriptions[characteristic.id] ?? [:]).values.map(\.central).sorted { $0.id < $1.id }
    }

    // MARK: Events from the stack

    private func handle(_ event: BackendEvent) {
        switch event {
        case .stateChanged(let newState):
            changeState(to: newState)
        case .connected(let central):
            centrals[central.id] = central
            queue.connected(central)
            continuation.yield(.centralConnected(central))
        case .disconnected(let central, let reason):
            let known = centrals.removeValue(forKey: central.id) ?? central
            endSubscriptions(of: known)
            queue.disconnected(known)
            drain()
            continuation.yield(.centralDisconnected(known, reason: reason))
        case .subscribed(let central, let id, let kind):
            guard let characteristic = characteristics[id] else {
                logger.warning("\(central) subscribed to unknown characteristic \(id): ignored")
                return
            }
            centrals[central.id] = central
            queue.connected(central)
            subscriptions[id, default: [:]][central.id] = (central, kind)
            continuation.yield(.subscribed(central, characteristic))
        case .unsubscribed(let central, let id):
            guard subscriptions[id]?.removeValue(forKey: central.id) != nil else { return }
            queue.unsubscribed(central, from: id)
            drain()
            if let characteristic = characteristics[id] { continuation.yield(.unsubscribed(central, characteristic)) }
        case .confirmed(let central):
            queue.confirmed(by: central)
            drain()
        case .writable(let central):
            queue.writable(central)
            drain()
        case .advertisingStopped(let reason):
            advertising = .stopped
            logger.warning("the stack stopped advertising: \(reason)")
            continuation.yield(.advertisingStopped(reason: reason))
        case .pairing(let pairing):
            continuation.yield(.pairing(pairing))
        }
    }

    private func changeState(to newState: PeripheralManagerState) {
        guard newState != state else { return }
        logger.info("state \(state.rawValue) -> \(newState.rawValue)")
        state = newState
        if newState != .poweredOn {
            // Links do not survive the adapter: end them so queued updates are counted as dropped.
            for central in centrals.values {
                endSubscriptions(of: central)
                queue.disconnected(central)
                continuation.yield(.centralDisconnected(central, reason: nil))
            }
            centrals.removeAll()
            drain()
        }
        if case .started = advertising { advertising = .started(onAir: newState == .poweredOn) }
        continuation.yield(.stateChanged(newState))
        let waiters = stateWaiters
        stateWaiters.removeAll()
        for waiter in waiters { waiter.resume(returning: newState) }
    }

    private func endSubscriptions(of central: Central) {
        for id in subscriptions.keys.sorted() where subscriptions[id]?.removeValue(forKey: central.id) != nil {
            if let characteristic = characteristics[id] { continuation.yield(.unsubscribed(central, characteristic)) }
        }
    }

    private func backendFinished() {
        logger.info("the backend finished its events: the manager stops")
        continuation.finish()
        let waiters = stateWaiters
        stateWaiters.removeAll()
        for waiter in waiters { waiter.resume(returning: state) }
    }

    // MARK: Performing the queue's actions

    private func drain() {
        defer { countChanges.changed() }
        while let action = queue.nextAction() {
            switch action {
            case .send(let central, let update):
                switch backend.send(update, to: central) {
                case .sent: queue.sent(to: central)
                case .wouldBlock: queue.wouldBlock(for: central)
                case .failed(let reason): queue.failed(for: central, reason: reason)
                }
            case .signalReady:
                continuation.yield(.readyToUpdateSubscribers)
            case .drop(let central, let count, let reason):
                logger.warning("dropped \(count) update(s) for \(central): \(reason)")
                continuation.yield(.updatesDropped(central, count: count, reason: reason))
            }
        }
    }
}
