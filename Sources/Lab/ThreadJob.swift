import Dispatch
import Foundation
import Synchronization

/// Work on a thread of its own that other threads wait for: how the lab's long-running loops (RootCanal's log, the
/// H4 relay, a socket splice) end. A blocking loop must not hold a thread of Swift's cooperative pool, and the
/// thread that waits for it is a plain one, so the wait is a semaphore, not a continuation.
final class ThreadJob<Outcome: Sendable>: Sendable {
    /// The body's result once it returned. Written once, by the job's thread, before `done` is signalled.
    private let outcome = Mutex<Outcome?>(nil)
    /// Signalled when the body returns; each wait that sees it signals it again, so every later wait sees it too.
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread named `name`.
    init(name: String, _ body: @escaping @Sendable () -> Outcome) {
        let thread = Thread { [self] in
            let result = body()
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// The body's result; nil while it runs.
    var result: Outcome? { outcome.withLock { $0 } }

    /// Waits until the body has returned, or until `limit` has passed (nil: no limit), and returns its result (nil
    /// when the limit passed first).
    @discardableResult
    func wait(within limit: Duration? = nil) -> Outcome? {
        let timeout: DispatchTime
        if let limit {
            let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
            timeout = .now() + .nanoseconds(Int(nanoseconds))
        } else {
            timeout = .distantFuture
        }
        guard done.wait(timeout: timeout) == .success else { return nil }
        done.signal()
        return result
    }
}
