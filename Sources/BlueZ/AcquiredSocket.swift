import DBus
import Glibc
@_spi(Backend) import Peripheral
import Synchronization

/// Our end of a socket pair handed to bluetoothd by `AcquireNotify` or `AcquireWrite` (5.66:src/gatt-database.c
/// `acquire_notify_reply`, `acquire_write_reply`, `sock_io_read`, `sock_io_send`).
///
/// - AcquireNotify: each datagram we write becomes one notification or indication to **every** subscribed device,
///   and bluetoothd closes its end when the last one unsubscribes (`ccc_write_cb` -> `io_destroy`). 5.66 never
///   writes back; BlueZ 5.80 writes byte 0x01 per indication confirmation, which `forNotifications` accepts.
/// - AcquireWrite: each datagram bluetoothd writes is one write's value; it closes its end when the application
///   is unregistered or bluetoothd exits.
///
/// Either way, EOF/HUP means bluetoothd let go. The D-Bus connection's loop polls the socket (`FileWatch`), so
/// what bluetoothd writes on it, its closing and its writability after `EAGAIN` are handled on the loop thread, like
/// bluetoothd's calls: an `AcquireWrite` datagram enters the router on the same thread as a `WriteValue`.
final class AcquiredSocket: Sendable {
    /// What the loop's handler needs, apart from the watch itself (which holds the handler: no cycle).
    private final class Endpoint: Sendable {
        let fd: Int32
        let datagramLimit: Int
        /// Set once, under the lock that `send` holds across its syscall: after `close()` no send is in flight, so
        /// the descriptor the loop then closes is no longer in use.
        let isClosed = Mutex(false)
        /// The watch, for the loop's handler to cancel on EOF; taken by the first `close`.
        let closer = Mutex<FileWatch?>(nil)
        let onDatagram: @Sendable ([UInt8]) -> Void
        let onWritable: @Sendable () -> Void
        let onClosed: @Sendable () -> Void

        init(
            fd: Int32, datagramLimit: Int, onDatagram: @escaping @Sendable ([UInt8]) -> Void,
            onWritable: @escaping @Sendable () -> Void, onClosed: @escaping @Sendable () -> Void
        ) {
            self.fd = fd
            self.datagramLimit = datagramLimit
            self.onDatagram = onDatagram
            self.onWritable = onWritable
            self.onClosed = onClosed
        }

        var closed: Bool { isClosed.withLock { $0 } }
    }

    private let endpoint: Endpoint
    private let watch: FileWatch

    /// A `SOCK_SEQPACKET` pair: ours (non-blocking, close-on-exec) and the one to hand to bluetoothd, which the
    /// caller must close after appending it to the reply. Throws `BlueZError.export` when the kernel refuses.
    static func makePair() throws(BlueZError) -> (local: Int32, remote: Int32) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
            throw .export("socketpair failed: \(String(cString: strerror(errno)))")
        }
        return (fds[0], fds[1])
    }

    /// Watches `fd` (which it now owns) on `connection`'s loop: `onDatagram` for each datagram bluetoothd writes
    /// (cut to `datagramLimit` bytes), `onWritable` after a `.wouldBlock` once the socket drains, `onClosed` when
    /// bluetoothd closes its end. Each runs on the loop thread; none runs after `close()` made there.
    init(
        fd: Int32, on connection: BusConnection, datagramLimit: Int,
        onDatagram: @escaping @Sendable ([UInt8]) -> Void, onWritable: @escaping @Sendable () -> Void = {},
        onClosed: @escaping @Sendable () -> Void
    ) {
        let endpoint = Endpoint(
            fd: fd, datagramLimit: datagramLimit, onDatagram: onDatagram, onWritable: onWritable, onClosed: onClosed)
        self.endpoint = endpoint
        let watch = connection.watch(fd) { readiness in
            switch readiness {
            case .readable: Self.readable(endpoint)
            case .writable: if !endpoint.closed { endpoint.onWritable() }
            }
        }
        self.watch = watch
        // The handler closes the socket on EOF, which cancels the watch: it reaches the watch through the endpoint.
        endpoint.closer.withLock { $0 = watch }
        // Made off the loop, the watch may already have seen the end and found no watch to cancel: a hung-up socket
        // left polled would wake the loop forever. (On the loop, as the backend makes them, it cannot: the handler
        // runs only after this returns.)
        if endpoint.closed { endpoint.closer.withLock { $0.take() }?.cancel() }
    }

    /// An AcquireNotify socket: `onConfirm` for each 5.80 confirmation byte (commit 6b34b0551; 5.66 sends none).
    static func forNotifications(
        fd: Int32, on connection: BusConnection, onWritable: @escaping @Sendable () -> Void,
        onConfirm: @escaping @Sendable () -> Void,
        onClosed: @escaping @Sendable () -> Void
    ) -> AcquiredSocket {
        AcquiredSocket(
            fd: fd, on: connection, datagramLimit: 16,
            onDatagram: { bytes in for byte in bytes where byte == 0x01 { onConfirm() } },
            onWritable: onWritable, onClosed: onClosed)
    }

    deinit { close() }

    /// Writes one datagram from any thread: `.sent`, `.wouldBlock` (then `onWritable` fires once), or `.failed`
    /// when closed.
    func send(_ bytes: [UInt8]) -> SendOutcome {
        let fd = endpoint.fd
        let outcome: SendOutcome = endpoint.isClosed.withLock { isClosed in
            guard !isClosed else { return .failed("the acquired socket is closed") }
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written >= 0 { return .sent }
            let error = errno
            if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
            return .failed("acquired socket: \(String(cString: strerror(error)))")
        }
        if outcome == .wouldBlock { watch.armWritable() }
        return outcome
    }

    /// Stops watching and closes our end; safe to call twice. Returns whether this call closed it.
    @discardableResult
    func close() -> Bool { Self.close(endpoint) }

    private static func close(_ endpoint: Endpoint) -> Bool {
        let closing = endpoint.isClosed.withLock { isClosed in
            defer { isClosed = true }
            return !isClosed
        }
        if closing { endpoint.closer.withLock { $0.take() }?.cancel() }
        return closing
    }

    private static func readable(_ endpoint: Endpoint) {
        let fd = endpoint.fd
        var buffer = [UInt8](repeating: 0, count: endpoint.datagramLimit)
        while !endpoint.closed {
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            // A central may write zero bytes, which arrives as an empty datagram: recv's 0 is EOF only when the
            // peer has gone and nothing is queued behind it. (Empty datagrams that are the very last thing
            // bluetoothd sent before exiting cannot be told from EOF; the kernel reports both alike.)
            if count > 0 || (count == 0 && (!isPeerGone(fd) || bytesQueued(fd) > 0)) {
                endpoint.onDatagram(Array(buffer[..<count]))
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            // EOF or an error: bluetoothd closed its end (last subscriber gone, application unregistered, or
            // bluetoothd exited).
            if close(endpoint) { endpoint.onClosed() }
            return
        }
    }

    /// The bytes waiting in the receive queue (SIOCINQ: every queued datagram's length, for SEQPACKET).
    private static func bytesQueued(_ fd: Int32) -> Int32 {
        var count: Int32 = 0
        guard ioctl(fd, UInt(FIONREAD), &count) == 0 else { return 0 }
        return count
    }

    /// Whether bluetoothd closed its end, without waiting: a connected SEQPACKET socket whose peer closed is
    /// fully shut down, which poll reports as POLLHUP.
    private static func isPeerGone(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) >= 0 else { return true }
        return entry.revents & (Int16(POLLHUP) | Int16(POLLERR)) != 0
    }
}
