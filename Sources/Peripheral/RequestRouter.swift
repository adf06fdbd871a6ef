import GATTModel
import Logging
import Synchronization

/// Turns the stack's reads and writes into requests for the handler, each answered exactly once. Every backend
/// is handed the manager's router by `PeripheralBackend.attach(_:)` and calls `read`/`write` on the thread the
/// request arrived on: there is no other way in, for BlueZ or for `InMemoryBackend`.
///
/// The handler's `answerAtOnce` gets the request first, on the caller's thread: one it decides without waiting
/// (`ProfileServer` always; `BehaviourHandler` without a delaying fault, a handler program, or for a write the state
/// file) is answered before `read`/`write` return, with no task made: on the D-Bus loop thread the reply goes
/// straight to libdbus, and no deadline timer is ever armed. One it hands back starts the async method at once on
/// the same thread (`Task.immediate`), which runs there until it first suspends. Only a request still unanswered
/// then gets the deadline. Reads and writes each spell this out: folded into one generic function taking the two
/// methods as closures, it cost a read 350 instructions and a write 700 (Benchmarks/README.md, "Answering without a task").
///
/// ## The life of a read (BlueZ)
/// 1. libdbus hands the `ReadValue` call to the loop thread: `ConnectionCore.handleMethodCall` (DBus) finds the object and
///    its `Method(immediate:)` in `GATTApplication.characteristicInterface` (BlueZ), which wraps it as a
///    `MethodCall`, a non-copyable value whose `deinit` answers `Failed` if nobody else does.
/// 2. `BlueZBackend.read(_:_:)` (BlueZBackend+Requests.swift) admits only bluetoothd's unique name
///    (`OwnerCheck.admit`), reads the options and builds an `IncomingRead` whose `reply` (`MethodCallReply`) owns
///    the call and sends the bytes or the `BlueZErrorReply` for the ATT error.
/// 3. `RequestRouter.read(_:)` (here) moves `reply` into a `Responder`, which counts the request in the ledger, finds
///    the characteristic (unknown: Invalid Handle, answered by the engine) and starts the handler.
/// 4. The handler (`answerAtOnce`, else `handleRead`, of `ProfileServer` or `BehaviourHandler`) consumes the
///    `ReadRequest` with `respond(with:)` or `reject(_:)`; dropping it answers Unlikely Error; `DeadlineQueue`
///    answers a handler that suspends for longer than the deadline.
/// 5. `Responder.answer(_:by:)` takes the reply out for the first answer, counts it, and sends it:
///    `MethodCallReply.send` consumes the `MethodCall` with `reply` or `fail`, and libdbus sends it.
///
/// ## The life of a write
/// The same hops with `WriteValue`, `BlueZBackend.write(_:_:)`, `IncomingWrites`, `RequestRouter.write(_:)` and a
/// `WriteRequests` batch answered once for all. A write without response (no-reply flag) consumes its
/// `MethodCall` at once, so D-Bus counts it answered, and reaches the handler with `reply: nil`: the `Responder`
/// counts its answer and sends nothing. `AcquireWrite` datagrams (BlueZBackend+AcquireWrite.swift) enter at step 3.
///
/// ## Who owns "exactly once"
/// `Responder`, alone: it holds the stack's reply until the first answer takes it, so later answers have nothing
/// to send, and counts the ATT request in `RequestCounts` (`requests == answered`). The types around it only make
/// a second answer impossible to write: a `MethodCall`, `ReadRequest` or `WriteRequests` is consumed by its answer
/// (and a `MethodCall` dropped unanswered answers `Failed` itself, counted in `CallStatistics`). The two counts
/// differ on purpose: D-Bus calls include `StartNotify`, descriptor and agent calls, ATT requests include
/// `AcquireWrite` datagrams.
@_spi(Backend) public final class RequestRouter: Sendable {
    private let handler: any RequestHandler
    private let ledger: RequestLedger
    /// One timer for the deadlines of every request whose handler suspended.
    private let deadlines: DeadlineQueue
    private let logger: Logger
    /// `logger`'s level, for each request's `Responder`.
    private let logLevel: Logger.Level
    /// The published characteristics by id, as the manager last set them.
    private let characteristics = Mutex(CharacteristicTable())

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
        logLevel = logger.logLevel
    }

    /// Makes these characteristics requestable (the manager calls it as it publishes).
    package func publish(_ published: [Characteristic]) {
        characteristics.withLock { table in
            for characteristic in published { table.byID[characteristic.id] = characteristic }
        }
    }

    /// Makes these characteristics unknown again: a request for them gets Invalid Handle.
    package func remove(_ ids: [String]) {
        characteristics.withLock { table in
            for id in ids { table.byID[id] = nil }
        }
    }

    /// Hands a read to the handler; an unknown characteristic is answered Invalid Handle by the engine.
    public func read(_ incoming: consuming IncomingRead) {
        let central = incoming.central
        let id = incoming.characteristicID
        let offset = incoming.offset
        let linkSecurity = incoming.linkSecurity
        let errorDelivery = incoming.errorDelivery
        let responder = Responder(
            summary: "read of \(id) by \(central) at offset \(offset)", reply: incoming.reply, ledger: ledger,
            logger: logger, logLevel: logLevel)
        guard let characteristic = characteristics.withLock({ $0.find(id) }) else {
            responder.answer(.failure(.invalidHandle), by: .engine)
            return
        }
        let request = ReadRequest(
            central: central, characteristic: characteristic, offset: offset, linkSecurity: linkSecurity,
            errorDelivery: errorDelivery, responder: responder)
        switch handler.answerAtOnce(request) {
        case .none: armUnlessAnswered(responder)
        case .some(let pending):
            let handler = handler
            let handoff = Handoff(pending)
            start(responder) {
                guard let request = handoff.take() else { return }
                await handler.handleRead(request)
            }
        }
    }

    /// Hands a batch of writes to the handler; one unknown characteristic answers the batch Invalid Handle.
    public func write(_ incoming: consuming IncomingWrites) {
        let central = incoming.central
        let incomingWrites = incoming.writes
        let linkSecurity = incoming.linkSecurity
        let isAuthorizationOnly = incoming.isAuthorizationOnly
        let errorDelivery = incoming.errorDelivery
        let expectsResponse = incoming.reply != nil
        let responder = Responder(
            summary: "write of \(incomingWrites.map(\.characteristicID).joined(separator: ", ")) by \(central)",
            reply: incoming.reply, ledger: ledger, logger: logger, logLevel: logLevel)
        let found = characteristics.withLock { table -> [WriteRequest]? in
            var writes: [WriteRequest] = []
            writes.reserveCapacity(incomingWrites.count)
            for write in incomingWrites {
                guard let characteristic = table.find(write.characteristicID) else { return nil }
                writes.append(WriteRequest(characteristic: characteristic, offset: write.offset, value: write.value))
            }
            return writes
        }
        guard let writes = found else {
            responder.answer(.failure(.invalidHandle), by: .engine)
            return
        }
        let requests = WriteRequests(
            central: central, requests: writes, linkSecurity: linkSecurity, expectsResponse: expectsResponse,
            isAuthorizationOnly: isAuthorizationOnly, errorDelivery: errorDelivery, responder: responder)
        switch handler.answerAtOnce(requests) {
        case .none: armUnlessAnswered(responder)
        case .some(let pending):
            let handler = handler
            let handoff = Handoff(pending)
            start(responder) {
                guard let requests = handoff.take() else { return }
                await handler.handleWrites(requests)
            }
        }
    }

    /// Runs `body` at once on this thread until it suspends, then arms the deadline if it has not answered yet.
    private func start(_ responder: Responder, _ body: sending @escaping () async -> Void) {
        if #available(macOS 26, *) {
            Task.immediate(operation: body)
        } else {
            Task(operation: body)
        }
        armUnlessAnswered(responder)
    }

    /// Arms the deadline for a request still unanswered: one its handler suspended on, or kept by `answerAtOnce`
    /// for later. An answer racing in from elsewhere is fine: a deadline that finds the request answered does nothing.
    private func armUnlessAnswered(_ responder: Responder) {
        guard !responder.isAnswered else { return }
        deadlines.arm(responder)
    }
}

/// The published characteristics by id, and the one the last request found: a run of requests to one
/// characteristic compares its id (the identity check, when the backend hands over the published id itself) where a
/// lookup hashes it, about 300 instructions (Benchmarks/README.md, "The last route kept").
private struct CharacteristicTable {
    /// Every published characteristic; any change forgets `last`.
    var byID: [String: Characteristic] = [:] { didSet { last = nil } }
    private var last: Characteristic?

    /// The published characteristic `id`, or nil.
    mutating func find(_ id: String) -> Characteristic? {
        if let last, last.id == id { return last }
        last = byID[id]
        return last
    }
}

/// Carries a request `answerAtOnce` handed back into the task that runs the async handler: an escaping closure
/// cannot capture a noncopyable value, a class holding it can. Taken exactly once.
private final class Handoff<Request: ~Copyable & Sendable>: Sendable {
    private let request: Mutex<Request?>

    init(_ request: consuming Request) { self.request = Mutex(request) }

    func take() -> Request? { request.withLock { $0.take() } }
}
