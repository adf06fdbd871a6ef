import GATTModel
import Logging
import Synchronization

/// Turns the stack's reads and writes into requests for the handler, each answered exactly once. The manager
/// routes the `.read`/`.write` events of any backend through it; a backend that adopts `RequestRouting` calls it
/// directly, on the thread the request arrived on, and saves the two task switches an event costs.
///
/// The handler starts at once on the caller's thread (`Task.immediate`) and runs there until it first suspends.
/// A handler that decides without waiting (`ProfileServer`, `EmulationHandler` without a delay fault) has answered
/// before `read`/`write` return: on the D-Bus loop thread the reply goes straight to libdbus, and no deadline timer
/// is ever armed. Only a request still unanswered when its handler suspends gets the deadline.
package final class RequestRouter: Sendable {
    private let handler: any RequestHandler
    private let ledger: RequestLedger
    /// One timer for the deadlines of every request whose handler suspended.
    private let deadlines: DeadlineQueue
    private let logger: Logger
    /// The published characteristics by id, as the manager last set them.
    private let characteristics = Mutex<[String: Characteristic]>([:])

    /// A router handing requests to `handler`, counting them in `ledger`, answering `deadlineError` after `deadline`.
    package init(
        handler: any RequestHandler, ledger: RequestLedger, deadline: Duration, deadlineError: ATTError,
        logger: Logger
    ) {
        self.handler = handler
        self.ledger = ledger
        deadlines = DeadlineQueue(duration: deadline, error: deadlineError)
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
    package func read(_ incoming: IncomingRead) {
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
    package func write(_ incoming: IncomingWrites) {
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

/// A backend that hands reads and writes to the manager's `RequestRouter` directly, on the thread they arrive on,
/// instead of yielding `.read`/`.write` events (each of which costs a hop through the event stream and the actor).
/// Requests that arrive before the manager attaches still go out as events.
package protocol RequestRouting: PeripheralBackend {
    /// From now on, hands every read and write to `router` instead of yielding it as an event.
    func route(requestsTo router: RequestRouter)
}
