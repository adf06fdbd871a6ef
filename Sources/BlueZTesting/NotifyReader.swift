// bluetoothd's side of an AcquireNotify socket (5.66 src/gatt-database.c `sock_io_new`, `sock_io_read`):
// one datagram of at most 512 bytes per read, each handed on in order, until the app closes its end or
// bluetoothd destroys the io.
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Reads datagrams from an fd on its own thread (a blocking read must not hold a cooperative thread) and hands
/// each, in order, to `deliver`. `stop()` shuts the socket down, which wakes the read; the thread closes the fd.
final class NotifyReader: Sendable {
    private let fd: Int32
    /// Whether the fd is closed; guards `shutdown` against a number the kernel may already have reused.
    private let isClosed = Mutex<Bool>(false)
    private let datagrams: AsyncStream<[UInt8]>.Continuation
    /// While held, nothing is read: bluetoothd's main loop is busy, so the app's end fills up and blocks.
    private let isHeld: Mutex<Bool>
    /// Signalled on each `release()`: the reading thread sleeps on it while held, and checks `isHeld` again on
    /// waking (a signal left over from an earlier release only costs one more check).
    private let released = DispatchSemaphore(value: 0)

    init(fd: Int32, isHeld: Bool = false, deliver: @escaping @Sendable ([UInt8]) async -> Void) {
        self.fd = fd
        self.isHeld = Mutex(isHeld)
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
        datagrams = continuation
        Task {
            for await datagram in stream { await deliver(datagram) }
        }
        let thread = Thread { [self] in readUntilClosed() }
        thread.name = "fake-bluetoothd notify fd \(fd)"
        thread.start()
    }

    private func readUntilClosed() {
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            while isHeld.withLock({ $0 }) { released.wait() }
            // 5.66 reads only when its main loop reports the fd readable (`io_set_read_handler`): the app may hand
            // over a non-blocking end (O_NONBLOCK is shared by every dup), where a bare read() fails with EAGAIN.
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, -1) < 0, errno == EINTR { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 512) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else { break }
            datagrams.yield(Array(buffer[0..<count]))
        }
        isClosed.withLock { closed in
            close(fd)
            closed = true
        }
        datagrams.finish()
    }

    /// Stops reading until `release()`, as bluetoothd's busy main loop does.
    func hold() { isHeld.withLock { $0 = true } }

    /// Reads again.
    func release() {
        isHeld.withLock { $0 = false }
        released.signal()
    }

    /// Ends reading: the app sees its end hang up, as when 5.66 calls `io_destroy(chrc->notify_io)`.
    func stop() {
        isClosed.withLock { closed in
            if !closed { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
        // A held reader must wake to see the hang-up and close its fd.
        release()
    }
}
