import GATTModel
import GATTProfile
import Logging
import Peripheral

/// Runs a profile's behaviour against a `PeripheralManager`: schedules on a timer, write rules and faults through
/// its `handler`, values pushed through the manager's bounded notification queue without losing any.
///
/// Wiring (what `blemu run` does):
/// ```
/// let emulator = try Emulator(profile: profile, server: server, eventLog: log, stateStore: store)
/// let manager = PeripheralManager(backend: backend, handler: emulator.handler, restoring: restored)
/// // publish the services, start advertising, then:
/// await emulator.start(on: manager)
/// ...
/// await emulator.stop()
/// ```
///
/// One timer task sleeps until the earliest engine deadline on the injected clock, ticks every engine, performs
/// the actions and re-arms. Updates the queue refuses wait in an outbox, in order, and are retried on
/// `.readyToUpdateSubscribers`; a transfer (see `TransferDefinition`) streams through the same outbox, so a
/// blocked transfer also holds back later updates rather than reordering them.
public actor Emulator {
    /// The handler to give the `PeripheralManager`: it shares this emulator's engines.
    public nonisolated let handler: BehaviourHandler
    /// The profile being run.
    public nonisolated let profile: PeripheralProfile

    let server: ProfileServer
    let engines: SharedBehaviour
    let clock: ElapsedClock
    let log: EventLog?
    let stateStore: StateStore?
    let logger: Logger
    let transfers: [String: TransferDefinition]
    let characteristics: [String: Characteristic]
    /// The engines as the profile builds them, before any start, value or request: what `reset` goes back to.
    let initialEngines: RunningBehaviour
    private let followUps: AsyncStream<[EmulationAction]>
    private let followUpContinuation: AsyncStream<[EmulationAction]>.Continuation

    var manager: PeripheralManager?
    /// Where the device is served (`status`); nil until `serve(on:)`.
    var host: ServingHost?
    /// bluetoothd's version once asked: nil not yet, `.some(nil)` asked and unknown.
    var bluezVersion: String??
    private var tasks: [Task<Void, Never>] = []
    private var timer = Timer.disarmed
    /// Tells the timers apart: the one whose sleep ends must still be the armed one to tick.
    private var lastTimerToken = 0
    /// The most updates that wait for the notification queue (Core Bluetooth's "not now") before more are refused
    /// or dropped: also the most one `notify` command asks for, so such a burst always fits an empty outbox.
    public static let outboxCapacity = 100_000

    /// Updates the queue said "not now" to, in order, bounded (`Outbox`).
    var outbox = Outbox(capacity: Emulator.outboxCapacity)
    /// Updates dropped because the outbox was full (`EmulatorCounters.outboxDropped`).
    var outboxDropped = 0
    private var pumping = Pump.idle
    /// The manager's last state, to tell a return from `.resetting` (bluetoothd restarted) in the event log.
    private var lastState: PeripheralManagerState?
    /// The latest pairing steps, oldest first (`ctl pairing`).
    private(set) var pairings: [PairingEvent] = []
    /// The latest centrals that disconnected, newest last, with the stack's reason where it gave one: what the
    /// control socket's `centrals` answers beside who is connected.
    private(set) var disconnects: [(central: String, reason: DisconnectReason?)] = []

    /// An emulator for `profile`, serving values from `server`'s store. `clock` drives the schedules and fault
    /// delays (tests pass a manual one); `requestDeadline` must be the manager's, so delays stay under it.
    /// Throws `BehaviourError` when the behaviour names unknown characteristics or fields, or a replay file fails.
    public init(
        profile: PeripheralProfile, server: ProfileServer = ProfileServer(),
        clock: some Clock<Duration> = ContinuousClock(), requestDeadline: Duration = .seconds(10),
        baseDirectory: String? = nil, eventLog: EventLog? = nil, stateStore: StateStore? = nil,
        logger: Logger = Logger(label: "blemu.emulation")
    ) throws(BehaviourError) {
        let transfers = TransferDefinition.find(in: profile)
        // A transfer's schedule is replaced by the transfer itself, sent whole to each subscriber.
        var scheduled = profile
        scheduled.behaviour.schedules.removeAll { transfers[$0.characteristicID] != nil }
        let initial = RunningBehaviour(
            schedules: try Schedules(profile: scheduled, baseDirectory: baseDirectory),
            rules: try WriteRules(profile: profile), faults: Faults(faults: profile.behaviour.faults))
        let engines = SharedBehaviour(initial)
        initialEngines = initial
        let clock = ElapsedClock(clock)
        (followUps, followUpContinuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        handler = BehaviourHandler(
            server: server, engines: engines, clock: clock, requestDeadline: requestDeadline, log: eventLog,
            stateStore: stateStore, followUp: followUpContinuation, logger: logger,
            handlers: RequestHandlers(clock: clock, requestDeadline: requestDeadline, log: eventLog))
        self.profile = profile
        self.server = server
        self.engines = engines
        self.clock = clock
        self.log = eventLog
        self.stateStore = stateStore
        self.logger = logger
        self.transfers = transfers
        characteristics = Dictionary(profile.characteristics.map { ($0.id, $0) }) { first, _ in first }
        // Values restored from the state store may already be in the server's store: the engines start from them.
        let current = characteristics.values.map { ($0.id, server.store.value(of: $0)) }
        engines.withLock { engines in
            for (id, value) in current { engines.valueChanged(id, to: value) }
        }
    }

    /// Starts the engines now and follows the manager's events and the handler's actions until `stop()` or the
    /// manager stops. Call once, after publishing. The manager's `events` must have no other consumer.
    public func start(on manager: PeripheralManager) {
        guard self.manager == nil else {
            logger.warning("emulator already started: ignored")
            return
        }
        self.manager = manager
        let now = clock.now()
        engines.withLock { $0.schedules.start(at: now) }
        engines.withLock { $0.faults.start(at: now) }
        tasks.append(
            Task {
                for await event in manager.events { await self.handle(event) }
            })
        let followUps = followUps
        tasks.append(
            Task {
                for await actions in followUps {
                    await self.perform(actions)
                    self.arm()
                }
            })
        arm()
    }

    /// Stops the timer and stops following events; values already queued in the manager are still sent.
    public func stop() {
        for task in tasks { task.cancel() }
        tasks.removeAll()
        disarm()
        followUpContinuation.finish()
    }

    // MARK: Timer

    /// The one timer for the engines' earliest deadline.
    private enum Timer {
        /// No deadline, or no manager to act on.
        case disarmed
        /// A task sleeps until `deadline`; it ticks only if `token` is still the armed one when it wakes.
        case armed(deadline: Duration, token: Int, task: Task<Void, Never>)
    }

    /// Arms the one timer for the earliest deadline, unless it is armed for that moment already.
    func arm() {
        let deadline = engines.withLock { $0.nextDeadline }
        if case .armed(deadline, _, _) = timer { return }
        disarm()
        guard let deadline, manager != nil else { return }
        lastTimerToken += 1
        let token = lastTimerToken
        let clock = clock
        let task = Task { [weak self] in
            do { try await clock.sleepUntil(deadline) } catch { return }
            await self?.fire(token)
        }
        timer = .armed(deadline: deadline, token: token, task: task)
    }

    private func disarm() {
        if case .armed(_, _, let task) = timer { task.cancel() }
        timer = .disarmed
    }

    private func fire(_ token: Int) async {
        // A timer cancelled after its sleep ended must not tick: a newer timer owns the schedule now.
        guard case .armed(_, token, _) = timer else { return }
        timer = .disarmed
        let now = clock.now()
        let actions = engines.withLock { $0.tick(at: now) }
        arm()
        await perform(actions)
    }

    // MARK: Actions

    /// Performs engine actions in order: store, push, link faults, warnings.
    func perform(_ actions: [EmulationAction]) async {
        for action in actions {
            switch action {
            case .update(let id, let value):
                store(value, for: id)
            case .notify(let id, let value), .indicate(let id, let value):
                guard let characteristic = store(value, for: id) else { continue }
                await send(.value(characteristic, value, to: nil, times: 1))
            case .stopAdvertising:
                log?.record(.fault("stop-advertising", characteristicID: nil))
                do { try await manager?.stopAdvertising() } catch {
                    logger.warning("fault stop-advertising failed: \(error)")
                }
            case .disconnect:
                log?.record(.fault("disconnect", characteristicID: nil))
                do {
                    let ids = try await manager?.disconnect() ?? []
                    logger.notice("fault disconnect: dropped \(ids.isEmpty ? "no link" : ids.joined(separator: ", "))")
                } catch {
                    logger.warning("fault disconnect failed: \(error)")
                }
            case .warning(let id, let message):
                logger.warning("\(id): \(message)")
            // The decoder let a protocol name only scheduled characteristics, so these never throw.
            case .pauseSchedules(let id):
                try? pauseSchedules(id)
            case .resumeSchedules(let id):
                try? resumeSchedules(id)
            case .setField(let id, let field, let value):
                setField(field, of: id, to: value)
            case .wait(let duration):
                // On the emulator's clock, so a test advances it; a stop cancels the sleep and the rest goes on.
                try? await clock.sleepUntil(clock.now() + duration)
            }
        }
    }

    /// Sets one field of a characteristic's stored value (the value is fitted already), then lets the schedules
    /// generating that field go on from it: a counter counts on from a Set Cumulative Value.
    private func setField(_ field: String, of id: String, to value: FieldValue) {
        guard let characteristic = characteristics[id], let layout = characteristic.layout,
            let index = layout.index(of: field)
        else { return }
        let composition = ValueComposer.compose(
            [(index, value)], into: server.store.value(of: characteristic), layout: layout)
        for warning in composition.warnings { logger.warning("\(id): \(warning)") }
        guard store(composition.value, for: id) != nil else { return }
        engines.withLock { $0.schedules.rebase(field, of: id, to: value) }
    }

    /// Stores a value in the server's store and tells the engines; nil (logged) when the store refuses it.
    @discardableResult
    func store(_ value: [UInt8], for id: String) -> Characteristic? {
        guard let characteristic = characteristics[id] else { return nil }
        guard server.store.setValue(value, for: characteristic) else {
            logger.warning("\(id): value of \(value.count) bytes refused by the store (constant or too long)")
            return nil
        }
        engines.withLock { $0.valueChanged(id, to: value) }
        return characteristic
    }

    /// Queues an update behind any that wait, then sends what the notification queue accepts. With no room in the
    /// outbox (a central that stopped reading), the update is dropped, counted and recorded.
    func send(_ entry: Outbox.Entry) async {
        guard outbox.append(entry) else {
            let id = entry.characteristic.id
            outboxDropped += entry.updates
            logger.warning("\(id): \(entry.updates) update(s) dropped, \(outbox.updates) already wait for the queue")
            log?.record(.outboxFull(characteristicID: id, dropped: entry.updates))
            return
        }
        await pump()
    }

    /// The outbox's sender. The actor suspends on every `updateValue`, so a second call can arrive while one sends.
    private enum Pump {
        /// Nothing is sending.
        case idle
        /// A call is sending the outbox.
        case sending
        /// A call is sending, and another arrived meanwhile: the sender goes round once more before it stops.
        case sendingAgain
    }

    /// Sends waiting updates in order until the queue refuses one; `.readyToUpdateSubscribers` calls it again.
    /// Re-entrant calls only ask the running sender to go round again, also after a refusal: a "ready" that arrived
    /// while the refused update was on its way back would otherwise be lost, and the outbox wait for the next send.
    func pump() async {
        guard let manager else { return }
        guard case .idle = pumping else {
            pumping = .sendingAgain
            return
        }
        defer { pumping = .idle }
        repeat {
            pumping = .sending
            sending: while let (serial, first) = outbox.first {
                switch first {
                case .value(let characteristic, let value, let central, _):
                    switch await updateValue(value, for: characteristic, to: central, on: manager) {
                    case .refused: break sending
                    case .sent: outbox.sentValue(serial)
                    case .centralLeft: outbox.centralLeft(serial)
                    }
                case .transfer(let characteristic, let central, var chunker):
                    sendingChunks: while let chunk = chunker.next() {
                        switch await updateValue(chunk, for: characteristic, to: central, on: manager) {
                        case .refused:
                            outbox.transferWaits(serial, at: chunker)
                            break sending
                        case .centralLeft:
                            outbox.centralLeft(serial)
                            break sendingChunks
                        case .sent: chunker.markSent()
                        }
                        // Its central left while the chunk was out, and `.unsubscribed` removed it: the rest goes
                        // nowhere, and a transfer queued for the central's next subscription must not get it.
                        guard outbox.first?.serial == serial else { break }
                    }
                    outbox.transferDone(serial)
                }
            }
        } while pumping == .sendingAgain
    }

    /// What became of one update the pump handed the manager.
    private enum Delivery {
        /// Queued for its centrals (or there were none, for an update to every subscriber).
        case sent
        /// The queue is full: the update waits in the outbox for `.readyToUpdateSubscribers`.
        case refused
        /// It was for one central, which is no longer subscribed: nothing was sent, and nothing more is.
        case centralLeft
    }

    private func updateValue(
        _ value: [UInt8], for characteristic: Characteristic, to central: Central?, on manager: PeripheralManager
    ) async -> Delivery {
        let subscribers = await manager.subscribedCentrals(of: characteristic)
        // The manager already dropped the central, and its `.unsubscribed` may still wait behind the event the pump
        // runs for: a transfer would otherwise go on to nobody while the log counted its chunks as sent.
        // By id, as the manager addresses centrals: the central's MTU may have changed since the update was queued.
        if let central, !subscribers.contains(where: { $0.id == central.id }) { return .centralLeft }
        guard await manager.updateValue(value, for: characteristic, onSubscribedCentrals: central.map { [$0] }) else {
            log?.record(.queueFull(characteristicID: characteristic.id))
            return .refused
        }
        log?.record(
            .notification(
                characteristicID: characteristic.id, value: value,
                isIndication: !characteristic.properties.contains(.notify),
                centrals: central == nil ? subscribers.count : 1))
        return .sent
    }

    // MARK: Manager events

    private func handle(_ event: PeripheralEvent) async {
        switch event {
        case .stateChanged(let state):
            log?.record(.stateChanged(state.rawValue))
            // The stack reports `.resetting` when bluetoothd leaves the bus and the next state once it is back and
            // the backend has registered the application, advertisement and agent with it again.
            if lastState == .resetting, state == .poweredOn || state == .poweredOff {
                log?.record(.restarted(reason: "the stack is back after a reset (\(state.rawValue))"))
            }
            lastState = state
        case .willRestoreState(let restored):
            for (id, value) in restored.values.sorted(by: { $0.key < $1.key }) { store(value, for: id) }
            logger.info("restored \(restored.values.count) value(s)")
            // Subscriptions cannot be restored on BlueZ: when the previous run's application left the bus,
            // bluetoothd removed its services and every central's CCCD state with them (5.66 src/gatt-database.c
            // `gatt_db_service_removed` -> `remove_device_ccc`), and it calls AcquireNotify/StartNotify again only
            // when a central writes its CCCD again, typically after the Service Changed indication it sends then.
            let saved = restored.subscriptions.sorted { $0.key < $1.key }
            if !saved.isEmpty {
                let list = saved.map { "\($0.key) (\($0.value.joined(separator: ", ")))" }.joined(separator: ", ")
                let why = "each resumes when its central subscribes again (the stack forgot them with the previous run)"
                logger.notice("\(saved.count) saved subscription(s) not re-established: \(list); \(why)")
            }
            await saveSubscriptions()
        case .centralConnected(let central):
            log?.record(.connected(central: central.id))
        case .centralDisconnected(let central, let reason):
            disconnects = Array((disconnects + [(central.id, reason)]).suffix(Self.keptPairings))
            log?.record(.disconnected(central: central.id, reason: reason))
        case .subscribed(let central, let characteristic):
            // Logged after the schedules know, so an observer that reacts to the line finds them running.
            await subscribersChanged(characteristic)
            log?.record(.subscribed(central: central.id, characteristicID: characteristic.id))
            if let transfer = transfers[characteristic.id],
                let chunker = TransferChunker(
                    bytes: transfer.bytes, maximumUpdateLength: central.maximumUpdateValueLength)
            {
                await send(.transfer(characteristic, central, chunker))
            }
        case .unsubscribed(let central, let characteristic):
            // A transfer to a central that left has nobody to go to.
            outbox.removeAll {
                if case .transfer(let c, let target, _) = $0 {
                    c.id == characteristic.id && target == central
                } else {
                    false
                }
            }
            await subscribersChanged(characteristic)
            log?.record(.unsubscribed(central: central.id, characteristicID: characteristic.id))
        case .readyToUpdateSubscribers:
            log?.record(.queueReady)
            await pump()
        case .updatesDropped(let central, let count, let reason):
            logger.warning("\(count) update(s) for \(central) dropped: \(reason)")
        case .advertisingStopped(let reason):
            logger.warning("advertising stopped by the stack: \(reason)")
        case .pairing(let pairing):
            // Kept for `ctl pairing`: a test reads a displayed passkey there and types it on its central.
            pairings = Array((pairings + [pairing]).suffix(Self.keptPairings))
            log?.record(.pairing(pairing))
        }
    }

    /// How many pairing steps `pairings` keeps, and disconnects `disconnects`, newest last.
    static let keptPairings = 16

    private func subscribersChanged(_ characteristic: Characteristic) async {
        guard let manager else { return }
        let count = await manager.subscribedCentrals(of: characteristic).count
        let now = clock.now()
        engines.withLock { $0.schedules.subscribersChanged(characteristic.id, count: count, at: now) }
        arm()
        await saveSubscriptions()
    }

    /// Saves the live subscriptions (none right after a restart: see `.willRestoreState`), so the state file never
    /// claims a subscription the stack no longer has.
    private func saveSubscriptions() async {
        guard let manager, let stateStore else { return }
        var subscriptions: [String: [String]] = [:]
        for published in characteristics.values.sorted(by: { $0.id < $1.id }) {
            let ids = await manager.subscribedCentrals(of: published).map(\.id)
            if !ids.isEmpty { subscriptions[published.id] = ids }
        }
        await stateStore.recordSubscriptions(subscriptions)
    }
}
