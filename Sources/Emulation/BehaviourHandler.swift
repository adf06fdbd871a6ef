import GATTModel
import Logging
import Peripheral

/// The request handler of a running profile: `ProfileServer`'s checks and store, with the profile's faults applied
/// first and its write rules second. Each request still gets exactly one answer:
/// - a rejecting fault answers with its error instead of the normal answer;
/// - a delaying fault holds the one answer, kept under the manager's request deadline (logged when it had to be
///   shortened, since past the deadline the engine would answer for us and our answer would be refused), and cut
///   short at shutdown (`HoldRelease`), so blemu answers it before unregistering;
/// - a write rule's `reject` answers its error and changes nothing; `accept` stores through the server before
///   answering (so a read right after sees the value), then hands the rule's actions to the `Emulator`.
///
/// Made by `Emulator`, which shares its engines; pass `emulator.handler` to the `PeripheralManager`.
public struct BehaviourHandler: RequestHandler {
    /// The server whose store and checks this handler uses.
    public let server: ProfileServer
    let engines: SharedBehaviour
    let clock: ElapsedClock
    let requestDeadline: Duration
    let log: EventLog?
    let stateStore: StateStore?
    /// Accepted writes' actions and faults' link actions, for the emulator to perform in order.
    let followUp: AsyncStream<[EmulationAction]>.Continuation
    let logger: Logger
    /// Ends the fault delays early at shutdown (`Emulator.releaseHeldRequests`), so every request is answered.
    let release = HoldRelease()
    /// The programs answering requests over the control socket, asked after the profile's checks pass.
    let handlers: RequestHandlers

    /// Answers a read: fault, then the server's checks, then the stored value.
    public func handleRead(_ request: consuming ReadRequest) async {
        let started = ContinuousClock.now
        // The handler's clock, read only when one is attached: the handler's deadline counts from here.
        let arrived = handlers.isEmpty ? nil : clock.now()
        let characteristic = request.characteristic
        let faults = engines.withLock { $0.faults.request(.read, characteristicID: characteristic.id) }
        if !faults.isEmpty { await hold(faults, on: characteristic.id) }
        var answer = EmulationEvent.Answer.success
        var value: [UInt8] = []
        if let error = faults.rejection
            ?? ProfileServer.error(for: .read, on: characteristic, linkSecurity: request.linkSecurity)
        {
            answer = .error(error)
        } else {
            value = server.store.value(of: characteristic)
            // A handler answers with the whole value; the part from the offset is served, as from the store.
            if handlers.handles(.read, on: characteristic.id),
                let verdict = await handlers.forward(
                    .read, on: characteristic, central: request.central, value: [], offset: request.offset,
                    arrived: arrived)
            {
                switch verdict {
                case .accept(let handled): value = handled ?? value
                case .reject(let error): answer = .error(error)
                case .profile: break
                }
            }
            if answer == .success && request.offset > value.count { answer = .error(.invalidOffset) }
        }
        let offset = request.offset
        // Logged just before the answer, so whoever sees the answer finds its line already in the log; with the
        // code the central receives, which the stack may have to change.
        log?.record(
            .request(
                operation: .read, central: request.central.id, characteristicID: characteristic.id,
                value: offset <= value.count ? Array(value[offset...]) : [],
                answer: Self.asReceived(answer, on: .read, through: request.errorDelivery),
                latency: ContinuousClock.now - started))
        // One answer, computed above and sent once here.
        switch answer {
        case .success: request.respond(with: value)
        case .error(let error, _): request.reject(error)
        }
        if !faults.actions.isEmpty { followUp.yield(faults.actions) }
    }

    /// Answers a batch of writes: faults (one count per write), the server's checks, the rules (`runRules`) when
    /// any governs a written characteristic, then the store.
    public func handleWrites(_ requests: consuming WriteRequests) async {
        let started = ContinuousClock.now
        // The handler's clock, read only when one is attached: the handler's deadline counts from here.
        let arrived = handlers.isEmpty ? nil : clock.now()
        let writes = requests.requests
        let faults = engines.withLock { engines in
            var merged = Faults.RequestFaults()
            for write in writes {
                let fired = engines.faults.request(.write, characteristicID: write.characteristic.id)
                merged.rejection = merged.rejection ?? fired.rejection
                if let delay = fired.delay { merged.delay = (merged.delay ?? .zero) + delay }
                merged.actions += fired.actions
            }
            return merged
        }
        if !faults.isEmpty { await hold(faults, on: writes.first?.characteristic.id) }
        var failure = faults.rejection
        let linkSecurity = requests.linkSecurity
        if failure == nil {
            failure =
                writes.lazy.compactMap {
                    ProfileServer.error(for: .write, on: $0.characteristic, linkSecurity: linkSecurity)
                }.first
        }
        var staged: [String: [UInt8]] = [:]
        let isAuthorizationOnly = requests.isAuthorizationOnly
        if failure == nil && isAuthorizationOnly {
            // BlueZ 5.66 asks with no bytes: only the offsets can be judged; the rules see the real value at Execute.
            failure = requests.authorizationError
        } else if failure == nil {
            switch requests.validated(current: server.store.value(of:)) {
            case .success(let values): staged = values
            case .failure(let error): failure = error
            }
        }
        var actions: [EmulationAction] = []
        var rulesMoved = false
        var verdict: RequestHandlers.Verdict?
        if failure == nil && !isAuthorizationOnly, let characteristic = handledWrite(writes) {
            verdict = await handlers.forward(
                .write, on: characteristic, central: requests.central, value: staged[characteristic.id] ?? [],
                offset: 0, withoutResponse: !requests.expectsResponse, arrived: arrived)
        }
        switch verdict {
        case .accept(let kept)?: await store(kept.map { [writes[0].characteristic.id: $0] } ?? staged, of: writes)
        case .reject(let error)?: failure = error
        case .profile?, nil: break
        }
        if failure == nil && !isAuthorizationOnly && (verdict == nil || verdict == .profile) {
            let isRuled = engines.withLock { engines in
                writes.contains { engines.rules.hasRule(for: $0.characteristic.id) }
            }
            if isRuled {
                (failure, actions, rulesMoved) = await runRules(on: staged, of: writes)
            } else {
                // No rule to run: stored as ProfileServer stores, and nothing is left for the emulator to do.
                await store(staged, of: writes)
            }
        }
        let central = requests.central.id
        let answer = Self.asReceived(
            failure.map { .error($0) } ?? .success, on: .write, through: requests.errorDelivery)
        let latency = ContinuousClock.now - started
        for write in writes {
            log?.record(
                .request(
                    operation: .write, central: central, characteristicID: write.characteristic.id,
                    value: write.value, answer: answer, latency: latency))
        }
        if let failure { requests.reject(failure) } else { requests.respond() }
        // Only when there is something to do: each yield wakes the emulator's actor, a thread switch that cost more
        // than the write itself (Benchmarks/README.md). A write whose rule started or ended a ramp moved the rules'
        // next deadline, and the emulator must re-arm its timer even with no action to perform.
        let followUps = (failure == nil ? actions : []) + faults.actions
        if !followUps.isEmpty || rulesMoved { followUp.yield(followUps) }
    }

    /// The characteristic whose handler decides this batch: one written characteristic, answered by a handler. A
    /// reliable write across several characteristics is one answer the profile gives, handled or not: a handler
    /// answers one characteristic's requests (docs/control-and-events.md, "Handlers").
    private func handledWrite(_ writes: [WriteRequest]) -> Characteristic? {
        guard let characteristic = writes.first?.characteristic,
            writes.allSatisfy({ $0.characteristic.id == characteristic.id }),
            handlers.handles(.write, on: characteristic.id)
        else { return nil }
        return characteristic
    }

    /// Runs the write rules on the staged values, on a copy of the engines committed only when every write is
    /// accepted, then stores what they stored. Returns the rejection, the actions left for the emulator, and
    /// whether the rules' next deadline moved (a ramp started or ended).
    private func runRules(
        on staged: [String: [UInt8]], of writes: [WriteRequest]
    ) async -> (ATTError?, [EmulationAction], Bool) {
        // Written characteristics in the order the central first wrote them, for a predictable action order.
        var order: [String] = []
        for write in writes where !order.contains(write.characteristic.id) { order.append(write.characteristic.id) }
        let now = clock.now()
        let (failure, decided, moved, traces) = engines.withLock {
            engines -> (ATTError?, [EmulationAction], Bool, [Protocols.Trace]) in
            var rules = engines.rules
            var actions: [EmulationAction] = []
            var traces: [Protocols.Trace] = []
            for id in order {
                let (decision, trace) = rules.traced(staged[id] ?? [], to: id, at: now)
                if let trace { traces.append(trace) }
                switch decision {
                case .reject(let error): return (error, [], false, traces)
                case .accept(let accepted): actions += accepted
                }
            }
            let moved = rules.nextDeadline != engines.rules.nextDeadline
            engines.rules = rules
            return (nil, actions, moved, traces)
        }
        for var trace in traces {
            // A refused batch changes nothing, whatever its cases would have set.
            if failure != nil {
                trace.changes = []
                trace.fields = []
            }
            log?.record(.protocolCase(trace))
        }
        var actions = decided
        if failure == nil {
            var updates: [String: [UInt8]] = [:]
            for case .update(let id, let value) in actions { updates[id] = value }
            let stored = await store(updates, of: writes)
            // What was stored here needs nothing more from the emulator.
            actions.removeAll { if case .update(let id, _) = $0 { stored.contains(id) } else { false } }
        }
        return (failure, actions, moved)
    }

    /// Stores `values` (by characteristic id) into the written characteristics among them, before the answer, and
    /// persists what changed: with `--restore-id` the answer waits until the value is on disk (the state store's
    /// writer does the waiting; this task is off the bus thread from here), so an acknowledged write survives a
    /// crash. Returns the ids stored; a value for a characteristic not written here is left to the emulator.
    @discardableResult
    private func store(_ values: [String: [UInt8]], of writes: [WriteRequest]) async -> [String] {
        var stored: [(id: String, value: [UInt8])] = []
        for write in writes {
            let id = write.characteristic.id
            guard let value = values[id], !stored.contains(where: { $0.id == id }),
                server.store.setValue(value, for: write.characteristic)
            else { continue }
            stored.append((id, value))
        }
        guard !stored.isEmpty else { return [] }
        engines.withLock { engines in
            for (id, value) in stored { engines.valueChanged(id, to: value) }
        }
        if let stateStore {
            await stateStore.recordWrites(Dictionary(stored, uniquingKeysWith: { _, last in last }))
        }
        return stored.map(\.id)
    }

    /// `answer` as the central receives it through `delivery`: an error the stack cannot carry becomes the one it
    /// sends, with the asked one kept beside it.
    static func asReceived(
        _ answer: EmulationEvent.Answer, on operation: AttributeOperation, through delivery: ErrorDelivery
    ) -> EmulationEvent.Answer {
        guard case .error(let asked, _) = answer else { return answer }
        let received = delivery.delivered(asked, on: operation)
        return received == asked ? answer : .error(received, asked: asked)
    }

    /// Waits out a fault's delay, shortened to stay under the request deadline, and logs the faults that fired.
    private func hold(_ faults: Faults.RequestFaults, on id: String?) async {
        if let error = faults.rejection { log?.record(.fault("reject \(error)", characteristicID: id)) }
        guard var delay = faults.delay, delay > .zero else { return }
        // A tenth of the deadline is left for the answer to travel; past the deadline the engine answers instead.
        let limit = requestDeadline * 0.9
        if delay > limit {
            logger.warning(
                "fault delay of \(delay) on \(id ?? "a request") exceeds the request deadline \(requestDeadline): held \(limit) instead"
            )
            delay = limit
        }
        // The deadline is fixed before the fault is logged: whoever reacts to the line (a test advancing its
        // clock) cannot push the answer further out.
        let deadline = clock.now() + delay
        log?.record(.fault("delay \(delay)", characteristicID: id))
        // Whichever comes first: the delay's end, or shutdown releasing every hold.
        let clock = clock
        let release = release
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await clock.sleepUntil(deadline) }
            group.addTask { await release.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}
