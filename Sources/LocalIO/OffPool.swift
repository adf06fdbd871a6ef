/// Blocking work (a socket round trip, a file read) on a thread of its own: Swift's cooperative pool has as many
/// threads as cores (two here), and a task blocked in read(2) on one would stall every other task.
package enum OffPool {
    /// `body`'s result, computed on a new thread while the caller is suspended. At the process's thread limit it is
    /// computed here instead: slower for the other tasks, never lost.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            do { try DetachedThread.start { continuation.resume(returning: body()) } } catch {
                continuation.resume(returning: body())
            }
        }
    }
}
