#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A detached POSIX thread for blocking calls (accept, read) that must stay off Swift's cooperative pool: what
/// Foundation's `Thread` did, without linking Foundation into the serving binary.
package enum DetachedThread {
    /// The system's reason a thread could not be started (EAGAIN at the process's thread limit).
    package struct StartError: Error, CustomStringConvertible {
        /// `pthread_create`'s error number.
        package var code: Int32
        /// The system's message for `code`.
        package var description: String { "cannot start a thread: \(String(cString: strerror(code)))" }
    }

    /// Runs `body` on a new detached thread.
    package static func start(_ body: @escaping @Sendable () -> Void) throws(StartError) {
        final class Work {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let work = Unmanaged.passRetained(Work(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var handle = pthread_t()
        let status = pthread_create(
            &handle, &attributes,
            { argument in
                let work = Unmanaged<Work>.fromOpaque(argument!).takeRetainedValue()
                work.body()
                return nil
            }, work)
        guard status == 0 else {
            Unmanaged<Work>.fromOpaque(work).release()
            throw StartError(code: status)
        }
    }
}
