import Foundation

/// Blocking work (a control socket round trip, a file read) on a thread of its own: Swift's cooperative pool has
/// as many threads as cores (two here), and a tool blocked in read(2) on one would stall every other call.
enum OffPool {
    /// `body`'s result, computed on a new thread while the caller is suspended.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            start { continuation.resume(returning: body()) }
        }
    }

    /// Runs `body` on a new thread, which ends with it.
    static func start(_ body: @escaping @Sendable () -> Void) {
        Thread { body() }.start()
    }
}
