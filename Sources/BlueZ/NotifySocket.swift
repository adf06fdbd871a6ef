import Dispatch
import Glibc
import Peripheral
import Synchronization

/// Our end of an `AcquireNotify` socket pair (5.66:src/gatt-database.c `acquire_notify_reply`, `sock_io_read`):
/// each datagram we write becomes one notification or indication to **every** subscribed device, and bluetoothd
/// closes its end when the last one unsubscribes (`ccc_write_cb` -> `io_destroy`), which we see as EOF/HUP.
///
/// Writability after `EAGAIN` is watched with a DispatchSource that exists only while a send is waiting. 5.66
/// never writes to the socket; BlueZ 5.80 writes byte 0x01 per indication confirmation, which we also accept.
final class NotifySocket: Sendable {
    private struct State {
        var isClosed = false
        var reader: (any DispatchSourceRead)?
        var writer: (any DispatchSourceWrite)?
    }

    /// One queue for every socket's sources: their handlers only flip state and yield events.
    private static let queue = DispatchQueue(label: "blemu.bluez.notify-sockets")

    private let fd: Int32
    private let state = Mutex(State())
    private let onWritable: @Sendable () -> Void
    private let onConfirm: @Sendable () -> Void
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

    /// Watches `fd` (which it now owns): `onClosed` when bluetoothd closes its end, `onWritable` after a
    /// `.wouldBlock` once the socket drains, `onConfirm` for a 5.80 confirmation byte. None runs after `close()`.
    init(
        fd: Int32, onWritable: @escaping @Sendable () -> Void, onConfirm: @escaping @Sendable () -> Void,
        onClosed: @escaping @Sendable () -> Void
    ) {
        self.fd = fd
        self.onWritable = onWritable
        self.onConfirm = onConfirm
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

    deinit { close() }

    /// Writes one datagram: `.sent`, `.wouldBlock` (then `onWritable` fires once), or `.failed` when closed.
    func send(_ bytes: [UInt8]) -> SendOutcome {
        guard !state.withLock({ $0.isClosed }) else { return .failed("the notify socket is closed") }
        let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if written >= 0 { return .sent }
        let error = errno
        if error == EAGAIN || error == EWOULDBLOCK {
            armWriter()
            return .wouldBlock
        }
        return .failed("notify socket: \(String(cString: strerror(error)))")
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
        var buffer = [UInt8](repeating: 0, count: 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                // 5.80 and later: one 0x01 per indication confirmation (commit 6b34b0551). 5.66 sends none.
                for byte in buffer[..<count] where byte == 0x01 { onConfirm() }
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            // EOF or an error: bluetoothd closed its end (last subscriber gone, or bluetoothd exited).
            if close() { onClosed() }
            return
        }
    }
}
