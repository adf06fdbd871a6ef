import Dispatch
import LocalIO
import Synchronization

/// Work on a thread of its own that other threads wait for: how the lab's long-running loops (RootCanal's log, the
/// H4 relay, a socket splice) end. A blocking loop must not hold a thread of Swift's cooperative pool, and the
/// thread that waits for it is a plain one, so the wait is a semaphore, not a continuation.
final class ThreadJob<Outcome: Sendable>: Sendable {
    /// The body's result once it returned. Written once, by the job's thread, before `done` is signalled.
    private let outcome = Mutex<Outcome?>(nil)
    /// Signalled when the body returns; each wait that sees it signals it again, so every later wait sees it too.
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread, and `then` on it once its result is kept (a watcher's event); throws when the
    /// process may start no more threads.
    init(
        _ body: @escaping @Sendable () -> Outcome, then: @escaping @Sendable () -> Void = {}
    ) throws(DetachedThread.StartError) {
        try DetachedThread.start { [self] in
            let result = body()
            outcome.withLock { $0 = result }
            done.signal()
            then()
        }
    }

    /// The body's result; nil while it runs.
    var result: Outcome? { outcome.withLock { $0 } }

    /// Waits until the body has returned, or until `limit` has passed (nil: no limit), and returns its result (nil
    /// when the limit passed first).
    @discardableResult
    func wait(within limit: Duration? = nil) -> Outcome? {
        guard done.wait(timeout: limit.map(DispatchTime.after) ?? .distantFuture) == .success else { return nil }
        done.signal()
        return result
    }
}
