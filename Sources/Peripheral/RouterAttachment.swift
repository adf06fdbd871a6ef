import Logging
import Synchronization

/// The router a backend was attached to (`PeripheralBackend.attach(_:)`), and the one place that says what becomes
/// of a request that arrives before any: the engine answers it Unlikely Error, logged. A manager attaches in its
/// `init`, before anything can be published, so only a backend used without a manager meets it.
package final class RouterAttachment: Sendable {
    private let router = Mutex<RequestRouter?>(nil)
    private let logger: Logger?

    /// No router yet; `logger` reports requests answered for want of one.
    package init(logger: Logger? = nil) { self.logger = logger }

    /// From now on, requests go to `router`.
    package func attach(_ router: RequestRouter) { self.router.withLock { $0 = router } }

    /// Hands a read to the router, on the caller's thread.
    package func read(_ incoming: consuming IncomingRead) {
        if let router = router.withLock({ $0 }) { return router.read(incoming) }
        logger?.error("a read arrived before a manager attached: answered Unlikely Error")
        var reply = incoming.reply
        reply.send(.failure(.unlikelyError))
    }

    /// Hands writes to the router, on the caller's thread.
    package func write(_ incoming: consuming IncomingWrites) {
        if let router = router.withLock({ $0 }) { return router.write(incoming) }
        logger?.error("a write arrived before a manager attached: answered Unlikely Error")
        if var reply = incoming.reply { reply.send(.failure(.unlikelyError)) }
    }
}
