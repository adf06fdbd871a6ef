import Dispatch
import Glibc
import Peripheral
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
/// Either way, EOF/HUP means bluetoothd let go. Writability after `EAGAIN` is watched with a DispatchSource that
/// exists only while a send is waiting.
final class AcquiredSocket: Sendable {
    private struct State {
        var isClosed = false
        var reader: (any DispatchSourceRead)?
        var writer: (any DispatchSourceWrite)?
    }

    /// One queue for every socket's sources: their handlers only flip state and yield events.
    private static let queue = DispatchQueue(label: "blemu.bluez.notify-sockets")

    private let fd: Int32
    private let state = Mutex(State())
    private let datagramLimit: Int
    private let onDatagram: @Sendable ([UInt8]) -> Void
    private let onWritable: @Sendable () -> Void
    private let onClosed: @Sendable () -> Void

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

    /// Watches `fd` (which it now owns): `onDatagram` for each datagram bluetoothd writes (cut to `datagramLimit`
    /// bytes), `onWritable` after a `.wouldBlock` once the socket drains, `onClosed` when bluetoothd closes its
    /// end. None runs after `close()`.
    init(
        fd: Int32, datagramLimit: Int, onDatagram: @escaping @Sendable ([UInt8]) -> Void,
        onWritable: @escaping @Sendable () -> Void = {}, onClosed: @escaping @Sendable () -> Void
    ) {
        self.fd = fd
        self.datagramLimit = datagramLimit
        self.onDatagram = onDatagram
        self.onWritable = onWritable
        self.onClosed = onClosed
        state.withLock { state in
            let reader = DispatchSource.makeReadSource(fileDescriptor: fd, queue: Self.queue)
            reader.setEventHandler { [weak self] in self?.readable() }
            // The fd is closed only once the source is cancelled, so the kernel never reuses it under the source.
            reader.setCancelHandler { _ = Glibc.close(fd) }
            reader.resume()
            state.reader = reader
        }
    }

    /// An AcquireNotify socket: `onConfirm` for each 5.80 confirmation byte (commit 6b34b0551; 5.66 sends none).
    static func forNotifications(
        fd: Int32, onWritable: @escaping @Sendable () -> Void, onConfirm: @escaping @Sendable () -> Void,
        onClosed: @escaping @Sendable () -> Void
    ) -> AcquiredSocket {
        AcquiredSocket(
            fd: fd, datagramLimit: 16,
            onDatagram: { bytes in for byte in bytes where byte == 0x01 { onConfirm() } },
            onWritable: onWritable, onClosed: onClosed)
    }

    deinit { close() }

    /// Writes one datagram: `.sent`, `.wouldBlock` (then `onWritable` fires once), or `.failed` when closed.
    func send(_ bytes: [UInt8]) -> SendOutcome {
        guard !state.withLock({ $0.isClosed }) else { return .failed("the acquired socket is closed") }
        let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if written >= 0 { return .sent }
        let error = errno
        if error == EAGAIN || error == EWOULDBLOCK {
            armWriter()
            return .wouldBlock
        }
        return .failed("acquired socket: \(String(cString: strerror(error)))")
    }

    /// Stops watching and closes our end; safe to call twice. Returns whether this call closed it.
    @discardableResult
    func close() -> Bool {
        // Cancelling never blocks, so it happens under the lock: the sources never leave it.
        state.withLock { state in
            guard !state.isClosed else { return false }
            state.isClosed = true
            state.writer?.cancel()
            state.writer = nil
            if let reader = state.reader { reader.cancel() } else { _ = Glibc.close(fd) }
            state.reader = nil
            return true
        }
    }

    private func armWriter() {
        state.withLock { state in
            guard !state.isClosed, state.writer == nil else { return }
            let writer = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: Self.queue)
            writer.setEventHandler { [weak self] in self?.writable() }
            state.writer = writer
            writer.resume()
        }
    }

    private func writable() {
        let fire: Bool = state.withLock { state in
            guard let writer = state.writer else { return false }
            writer.cancel()
            state.writer = nil
            return !state.isClosed
        }
        if fire { onWritable() }
    }

    private func readable() {
        var buffer = [UInt8](repeating: 0, count: datagramLimit)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            // A central may write zero bytes, which arrives as an empty datagram: recv's 0 is EOF only when the
            // peer has gone and nothing is queued behind it. (Empty datagrams that are the very last thing
            // bluetoothd sent before exiting cannot be told from EOF; the kernel reports both alike.)
            if count > 0 || (count == 0 && (!isPeerGone() || bytesQueued() > 0)) {
                onDatagram(Array(buffer[..<count]))
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            // EOF or an error: bluetoothd closed its end (last subscriber gone, application unregistered, or
            // bluetoothd exited).
            if close() { onClosed() }
            return
        }
    }

    /// The bytes waiting in the receive queue (SIOCINQ: every queued datagram's length, for SEQPACKET).
    private func bytesQueued() -> Int32 {
        var count: Int32 = 0
        guard ioctl(fd, UInt(FIONREAD), &count) == 0 else { return 0 }
        return count
    }

    /// Whether bluetoothd closed its end, without waiting: a connected SEQPACKET socket whose peer closed is
    /// fully shut down, which poll reports as POLLHUP.
    private func isPeerGone() -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) >= 0 else { return true }
        return entry.revents & (Int16(POLLHUP) | Int16(POLLERR)) != 0
    }
}
