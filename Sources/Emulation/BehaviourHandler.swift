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

    /// Answers a read here when nothing makes it wait (no delaying fault, no handler answering it), as most reads
    /// are: no task is made for it. Hands it to `handleRead` otherwise.
    public func answerAtOnce(_ request: consuming ReadRequest) -> ReadRequest? {
        let started = ContinuousClock.now
        let characteristic = request.characteristic
        guard !handlers.handles(.read, on: characteristic.id),
            let faults = engines.withLock({
                $0.faults.requestsUnlessDelayed(.read, characteristicIDs: CollectionOfOne(characteristic.id))
            })
        else { return request }
        recordRejection(faults, on: characteristic.id)
        let refusal = readRefusal(request, faults: faults)
        let value = refusal == nil ? server.store.value(of: characteristic) : []
        finishRead(request, refusal: refusal, value: value, verdict: nil, faults: faults, started: started)
        return nil
    }

    /// Answers a read: fault, then the server's checks, then the stored value or a handler's.
    public func handleRead(_ request: consuming ReadRequest) async {
        let started = ContinuousClock.now
        // The handler's clock, read only when one is attached: the handler's deadline counts from here.
        let arrived = handlers.isEmpty ? nil : clock.now()
        let characteristic = request.characteristic
        let faults = engines.withLock { $0.faults.request(.read, characteristicID: characteristic.id) }
        if !faults.isEmpty { await hold(faults, on: characteristic.id) }
        let refusal = readRefusal(request, faults: faults)
        var value: [UInt8] = []
        var verdict: RequestHandlers.Verdict?
        if refusal == nil {
            value = server.store.value(of: characteristic)
            if handlers.handles(.read, on: characteristic.id) {
                verdict = await handlers.forward(
                    .read, on: characteristic, central: request.central, value: [], offset: request.offset,
                    arrived: arrived)
            }
        }
        finishRead(request, refusal: refusal, value: value, verdict: verdict, faults: faults, started: started)
    }

    /// What a read is refused with before any value is served: the fault's rejection, else the server's checks.
    private func readRefusal(_ request: borrowing ReadRequest, faults: Faults.RequestFaults) -> ATTError? {
        faults.rejection
            ?? ProfileServer.error(for: .read, on: request.characteristic, linkSecurity: request.linkSecurity)
    }

    /// The read's one answer: the refusal, else the handler's verdict on the stored `value` (a handler answers
    /// with the whole value; the part from the offset is served, as from the store). Logged, then sent.
    private func finishRead(
        _ request: consuming ReadRequest, refusal: ATTError?, value stored: [UInt8], verdict: RequestHandlers.Verdict?,
        faults: Faults.RequestFaults, started: ContinuousClock.Instant
    ) {
        var answer = EmulationEvent.Answer.success
        var value = stored
        if let refusal {
            answer = .error(refusal)
        } else {
            switch verdict {
            case .accept(let handled)?: value = handled ?? value
            case .reject(let error)?: answer = .error(error)
            case .profile?, nil: break
            }
            if answer == .success && request.offset > value.count { answer = .error(.invalidOffset) }
        }
        let offset = request.offset
        // Logged just before the answer, so whoever sees the answer finds its line already in the log; with the
        // code the central receives, which the stack may have to change.
        log?.record(
            .request(
                operation: .read, central: request.central.id, characteristicID: request.characteristic.id,
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

    /// Answers a batch here when nothing makes it wait (no delaying fault, no handler answering it, no state file
    /// to reach before the answer). Hands it to `handleWrites` otherwise.
    public func answerAtOnce(_ requests: consuming WriteRequests) -> WriteRequests? {
        let started = ContinuousClock.now
        let writes = requests.requests
        guard stateStore == nil, handledWrite(writes) == nil,
            let (faults, isRuled) = engines.withLock({ engines -> (Faults.RequestFaults, Bool)? in
                guard
                    let faults = engines.faults.requestsUnlessDelayed(
                        .write, characteristicIDs: writes.indices.lazy.map { writes[$0].characteristic.id })
                else { return nil }
                return (faults, writes.indices.contains { engines.isGoverned(writes[$0].characteristic.id) })
            })
        else { return requests }
        if faults.rejection != nil { recordRejection(faults, on: writes.first?.characteristic.id) }
        let outcome: WriteOutcome
        if isRuled {
            let (failure, staged) = stage(requests, rejection: faults.rejection)
            outcome = conclude(
                writes, staged: staged, failure: failure, verdict: nil,
                isAuthorizationOnly: requests.isAuthorizationOnly)
        } else {
            outcome = WriteOutcome(failure: faults.rejection ?? storeAsWritten(requests))
        }
        finishWrites(requests, outcome, faults: faults, started: started)
        return nil
    }

    /// Stores a batch no rule governs as `ProfileServer` does (its checks, then the store's own validation and
    /// store under one lock, with no staging table), and tells the engines what changed. Returns the error to
    /// answer with. The state file is not written here: with one, writes go through `handleWrites`.
    private func storeAsWritten(_ requests: borrowing WriteRequests) -> ATTError? {
        if let failure = server.apply(requests) { return failure }
        guard !requests.isAuthorizationOnly else { return nil }
        let writes = requests.requests
        // A plain write of one value, nearly every request, is the value the store now holds; after a write at an
        // offset or a batch, the store is asked for the values it holds (read outside the engines' lock).
        if writes.count == 1 && writes[0].offset == 0 {
            engines.withLock { $0.valueChanged(writes[0].characteristic.id, to: writes[0].value) }
        } else {
            let changed = writes.map { ($0.characteristic.id, server.store.value(of: $0.characteristic)) }
            engines.withLock { engines in
                for (id, value) in changed { engines.valueChanged(id, to: value) }
            }
        }
        return nil
    }

    /// Answers a batch of writes: faults (one count per write), the server's checks, a handler or the rules
    /// (`runRules`) when one governs a written characteristic, then the store, and the state file when there is one.
    public func handleWrites(_ requests: consuming WriteRequests) async {
        let started = ContinuousClock.now
        // The handler's clock, read only when one is attached: the handler's deadline counts from here.
        let arrived = handlers.isEmpty ? nil : clock.now()
        let writes = requests.requests
        let faults = engines.withLock {
            $0.faults.requests(.write, characteristicIDs: writes.lazy.map(\.characteristic.id))
        }
        if !faults.isEmpty { await hold(faults, on: writes.first?.characteristic.id) }
        let (failure, staged) = stage(requests, rejection: faults.rejection)
        var verdict: RequestHandlers.Verdict?
        if failure == nil && !requests.isAuthorizationOnly, let characteristic = handledWrite(writes) {
            verdict = await handlers.forward(
                .write, on: characteristic, central: requests.central, value: staged[characteristic.id] ?? [],
                offset: 0, withoutResponse: !requests.expectsResponse, arrived: arrived)
        }
        let outcome = conclude(
            writes, staged: staged, failure: failure, verdict: verdict,
            isAuthorizationOnly: requests.isAuthorizationOnly)
        // With `--restore-id` the answer waits until what was stored is on disk (the state store's writer does the
        // waiting; this task is off the bus thread from here), so an acknowledged write survives a crash.
        if let stateStore, !outcome.stored.isEmpty {
            await stateStore.recordWrites(Dictionary(outcome.stored, uniquingKeysWith: { _, last in last }))
        }
        finishWrites(requests, outcome, faults: faults, started: started)
    }

    /// A batch's checks before anything decides on it: the fault's rejection, the server's, then the values each
    /// write would leave (`validated`), or for an authorization-only batch, only its offsets.
    private func stage(
        _ requests: borrowing WriteRequests, rejection: ATTError?
    ) -> (failure: ATTError?, staged: [String: [UInt8]]) {
        var failure = rejection ?? ProfileServer.refusal(of: requests)
        guard failure == nil else { return (failure, [:]) }
        if requests.isAuthorizationOnly {
            // BlueZ 5.66 asks with no bytes: only the offsets can be judged; the rules see the real value at Execute.
            failure = requests.authorizationError
            return (failure, [:])
        }
        switch requests.validated(current: server.store.value(of:)) {
        case .success(let values): return (nil, values)
        case .failure(let error): return (error, [:])
        }
    }

    /// What a batch came to: its failure, the actions left for the emulator, whether the rules' next deadline
    /// moved, and what was stored (for the state file).
    private struct WriteOutcome {
        var failure: ATTError?
        var actions: [EmulationAction] = []
        var rulesMoved = false
        var stored: [(id: String, value: [UInt8])] = []
    }

    /// Decides a staged batch: a handler's verdict when it had one, else the rules when any governs a written
    /// characteristic, else the profile's store.
    private func conclude(
        _ writes: [WriteRequest], staged: [String: [UInt8]], failure: ATTError?, verdict: RequestHandlers.Verdict?,
        isAuthorizationOnly: Bool
    ) -> WriteOutcome {
        var outcome = WriteOutcome(failure: failure)
        switch verdict {
        case .accept(let kept)?:
            outcome.stored = store(kept.map { [writes[0].characteristic.id: $0] } ?? staged, of: writes)
        case .reject(let error)?: outcome.failure = error
        case .profile?, nil: break
        }
        guard outcome.failure == nil && !isAuthorizationOnly && (verdict == nil || verdict == .profile) else {
            return outcome
        }
        let isRuled = engines.withLock { engines in
            writes.indices.contains { engines.isGoverned(writes[$0].characteristic.id) }
        }
        if isRuled {
            outcome = runRules(on: staged, of: writes)
        } else {
            // No rule to run: stored as ProfileServer stores, and nothing is left for the emulator to do.
            outcome.stored = store(staged, of: writes)
        }
        return outcome
    }

    /// The batch's one answer: logged per write, then sent, then the follow-ups handed to the emulator.
    private func finishWrites(
        _ requests: consuming WriteRequests, _ outcome: WriteOutcome, faults: Faults.RequestFaults,
        started: ContinuousClock.Instant
    ) {
        let central = requests.central.id
        let answer = Self.asReceived(
            outcome.failure.map { .error($0) } ?? .success, on: .write, through: requests.errorDelivery)
        let latency = ContinuousClock.now - started
        let writes = requests.requests
        // By index, so no write (and its characteristic's fields) is copied out of the batch.
        for index in writes.indices {
            log?.record(
                .request(
                    operation: .write, central: central, characteristicID: writes[index].characteristic.id,
                    value: writes[index].value, answer: answer, latency: latency))
        }
        if let failure = outcome.failure { requests.reject(failure) } else { requests.respond() }
        // Only when there is something to do: each yield wakes the emulator's actor, a thread switch that cost more
        // than the write itself (Benchmarks/README.md). A write whose rule started or ended a ramp moved the rules'
        // next deadline, and the emulator must re-arm its timer even with no action to perform.
        let actions = outcome.failure == nil ? outcome.actions : []
        // Joined only when there is something to join: an empty join still cost an array append.
        if !actions.isEmpty || !faults.actions.isEmpty || outcome.rulesMoved {
            followUp.yield(actions + faults.actions)
        }
    }

    /// The characteristic whose handler decides this batch: one written characteristic, answered by a handler. A
    /// reliable write across several characteristics is one answer the profile gives, handled or not: a handler
    /// answers one characteristic's requests (docs/control-and-events.md, "Handlers").
    private func handledWrite(_ writes: [WriteRequest]) -> Characteristic? {
        // The handlers asked first: with none attached that is an atomic load, and nothing is copied out of the batch.
        guard let id = writes.first?.characteristic.id, handlers.handles(.write, on: id),
            writes.allSatisfy({ $0.characteristic.id == id })
        else { return nil }
        return writes[0].characteristic
    }

    /// Runs the write rules on the staged values, on a copy of the engines committed only when every write is
    /// accepted, then stores what they stored. Returns the rejection, the actions left for the emulator, whether
    /// the rules' next deadline moved (a ramp started or ended), and what was stored.
    private func runRules(on staged: [String: [UInt8]], of writes: [WriteRequest]) -> WriteOutcome {
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
        var outcome = WriteOutcome(failure: failure, actions: decided, rulesMoved: moved)
        if failure == nil {
            var updates: [String: [UInt8]] = [:]
            for case .update(let id, let value) in decided { updates[id] = value }
            let stored = store(updates, of: writes)
            outcome.stored = stored
            // What was stored here needs nothing more from the emulator.
            outcome.actions.removeAll {
                if case .update(let id, _) = $0 { stored.contains { $0.id == id } } else { false }
            }
        }
        return outcome
    }

    /// Stores `values` (by characteristic id) into the written characteristics among them, before the answer.
    /// Returns what was stored, for the state file; a value for a characteristic not written here is left to the
    /// emulator.
    private func store(_ values: [String: [UInt8]], of writes: [WriteRequest]) -> [(id: String, value: [UInt8])] {
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
        return stored
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

    /// Records a rejecting fault that fired, before the answer it replaces.
    private func recordRejection(_ faults: Faults.RequestFaults, on id: String?) {
        if let error = faults.rejection { log?.record(.fault("reject \(error)", characteristicID: id)) }
    }

    /// Waits out a fault's delay, shortened to stay under the request deadline, and logs the faults that fired.
    private func hold(_ faults: Faults.RequestFaults, on id: String?) async {
        recordRejection(faults, on: id)
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
