import GATTModel
import Logging
import Synchronization

/// Turns the stack's reads and writes into requests for the handler, each answered exactly once. Every backend
/// is handed the manager's router by `PeripheralBackend.attach(_:)` and calls `read`/`write` on the thread the
/// request arrived on: there is no other way in, for BlueZ or for `InMemoryBackend`.
///
/// The handler starts at once on the caller's thread (`Task.immediate`) and runs there until it first suspends.
/// A handler that decides without waiting (`ProfileServer`, `BehaviourHandler` without a delay fault) has answered
/// before `read`/`write` return: on the D-Bus loop thread the reply goes straight to libdbus, and no deadline timer
/// is ever armed. Only a request still unanswered when its handler suspends gets the deadline.
///
/// ## The life of a read (BlueZ)
/// 1. libdbus hands the `ReadValue` call to the loop thread: `ConnectionCore.handleMethodCall` (DBus) finds the object and
///    its `Method(immediate:)` in `GATTApplication.characteristicInterface` (BlueZ), which wraps it as a
///    `MethodCall`, a non-copyable value whose `deinit` answers `Failed` if nobody else does.
/// 2. `BlueZBackend.read(_:_:)` (BlueZBackend+Requests.swift) admits only bluetoothd's unique name
///    (`OwnerCheck.admit`), reads the options, boxes the call in a `PendingCall` (taken once) and builds an
///    `IncomingRead` whose `reply` sends the bytes or the `BlueZErrorReply` for the ATT error.
/// 3. `RequestRouter.read(_:)` (here) wraps `reply` in a `Responder`, which counts the request in the ledger, finds
///    the characteristic (unknown: Invalid Handle, answered by the engine) and starts the handler.
/// 4. The handler (`ProfileServer.handleRead`, `BehaviourHandler.handleRead`) consumes the `ReadRequest` with
///    `respond(with:)` or `reject(_:)`; dropping it answers Unlikely Error; `DeadlineQueue` answers a handler that
///    suspends for longer than the deadline.
/// 5. `Responder.answer(_:by:)` lets the first answer through, counts it, and calls `reply`: `PendingCall.reply`,
///    then `MethodCall.reply`, then libdbus.
///
/// ## The life of a write
/// The same hops with `WriteValue`, `BlueZBackend.write(_:_:)`, `IncomingWrites`, `RequestRouter.write(_:)` and a
/// `WriteRequests` batch answered once for all. A write without response (no-reply flag) consumes its
/// `MethodCall` at once, so D-Bus counts it answered, and reaches the handler with `reply: nil`: the `Responder`
/// counts its answer and sends nothing. `AcquireWrite` datagrams (BlueZBackend+AcquireWrite.swift) enter at step 3.
///
/// ## Who owns "exactly once"
/// One owner per layer, each for its own unit: `MethodCall` for a D-Bus call (its `deinit`, counted in
/// `CallStatistics`), `PendingCall` for the escaping closure that holds one, `Responder` for an ATT request
/// (counted in `RequestCounts`: `requests == answered`). The two counts differ on purpose: D-Bus calls include
/// `StartNotify`, descriptor and agent calls, ATT requests include `AcquireWrite` datagrams.
@_spi(Backend) public final class RequestRouter: Sendable {
    private let handler: any RequestHandler
    private let ledger: RequestLedger
    /// One timer for the deadlines of every request whose handler suspended.
    private let deadlines: DeadlineQueue
    private let logger: Logger
    /// The published characteristics by id, as the manager last set them.
    private let characteristics = Mutex<[String: Characteristic]>([:])

    /// A router handing requests to `handler`, counting them in `ledger`, answering `deadlineError` after `deadline`
    /// by `clock`.
    package init(
        handler: any RequestHandler, ledger: RequestLedger, deadline: Duration, deadlineError: ATTError,
        clock: ElapsedClock, logger: Logger
    ) {
        self.handler = handler
        self.ledger = ledger
        deadlines = DeadlineQueue(duration: deadline, error: deadlineError, clock: clock)
        self.logger = logger
    }

    /// Makes these characteristics requestable (the manager calls it as it publishes).
    package func publish(_ published: [Characteristic]) {
        characteristics.withLock { table in
            for characteristic in published { table[characteristic.id] = characteristic }
        }
    }

    /// Makes these characteristics unknown again: a request for them gets Invalid Handle.
    package func remove(_ ids: [String]) {
        characteristics.withLock { table in
            for id in ids { table[id] = nil }
        }
    }

    /// Hands a read to the handler; an unknown characteristic is answered Invalid Handle by the engine.
    public func read(_ incoming: IncomingRead) {
        let responder = Responder(
            summary: "read of \(incoming.characteristicID) by \(incoming.central) at offset \(incoming.offset)",
            reply: incoming.reply, ledger: ledger, logger: logger)
        guard let characteristic = characteristics.withLock({ $0[incoming.characteristicID] }) else {
            responder.answer(.failure(.invalidHandle), by: .engine)
            return
        }
        let handler = handler
        start(responder) {
            await handler.handleRead(
                ReadRequest(
                    central: incoming.central, characteristic: characteristic, offset: incoming.offset,
                    linkSecurity: incoming.linkSecurity, errorDelivery: incoming.errorDelivery, responder: responder))
        }
    }

    /// Hands a batch of writes to the handler; one unknown characteristic answers the batch Invalid Handle.
    public func write(_ incoming: IncomingWrites) {
        let responder = Responder(
            summary:
                "write of \(incoming.writes.map(\.characteristicID).joined(separator: ", ")) by \(incoming.central)",
            reply: incoming.reply, ledger: ledger, logger: logger)
        let found = characteristics.withLock { table -> [WriteRequest]? in
            var writes: [WriteRequest] = []
            writes.reserveCapacity(incoming.writes.count)
            for write in incoming.writes {
                guard let characteristic = table[write.characteristicID] else { return nil }
                writes.append(WriteRequest(characteristic: characteristic, offset: write.offset, value: write.value))
            }
            return writes
        }
        guard let writes = found else {
            responder.answer(.failure(.invalidHandle), by: .engine)
            return
        }
        let handler = handler
        start(responder) {
            await handler.handleWrites(
                WriteRequests(
                    central: incoming.central, requests: writes, linkSecurity: incoming.linkSecurity,
                    expectsResponse: incoming.reply != nil, isAuthorizationOnly: incoming.isAuthorizationOnly,
                    errorDelivery: incoming.errorDelivery, responder: responder))
        }
    }

    /// Runs `body` at once on this thread until it suspends, then arms the deadline if it has not answered yet.
    /// An answer racing in from the pool is fine: a deadline that finds the request answered does nothing.
    private func start(_ responder: Responder, _ body: sending @escaping () async -> Void) {
        if #available(macOS 26, *) {
            Task.immediate(operation: body)
        } else {
            Task(operation: body)
        }
        guard !responder.isAnswered else { return }
        deadlines.arm(responder)
    }
}
