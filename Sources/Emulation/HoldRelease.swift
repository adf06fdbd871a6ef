import Synchronization

/// Cuts short every fault delay holding a request, once: at shutdown each held request is answered at once (as it
/// would have been when the delay ended) before blemu unregisters, instead of being abandoned to bluetoothd's
/// timeout. Waiting after `release` returns at once; a cancelled wait ends too.
final class HoldRelease: Sendable {
    private struct State {
        var isReleased = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits cancelled before their continuation was registered.
        var cancelled: Set<Int> = []
    }

    private let state = Mutex(State())

    /// Whether `release` has been called.
    var isReleased: Bool { state.withLock { $0.isReleased } }

    /// Ends every wait, now and later.
    func release() {
        let waiters = state.withLock { state in
            state.isReleased = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once `release` is called (at once if it was), or when the calling task is cancelled.
    func wait() async {
        let id: Int? = state.withLock { state in
            guard !state.isReleased else { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.isReleased || state.cancelled.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                let waiter = state.waiters.removeValue(forKey: id)
                if waiter == nil { state.cancelled.insert(id) }
                return waiter
            }
            waiter?.resume()
        }
    }
}
