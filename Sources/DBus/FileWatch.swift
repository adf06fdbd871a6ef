import Glibc
import Synchronization

/// A file descriptor the connection's loop thread polls beside the bus, so that what happens on it is handled on the
/// same thread as the bus's calls and signals (bluetoothd's `AcquireNotify` and `AcquireWrite` sockets). The watch
/// owns the descriptor: `cancel()` (or deinit) stops polling and closes it on the loop thread, after its last
/// poll, so the kernel never hands the number to another file while the loop still polls it.
public final class FileWatch: Sendable {
    /// What the loop saw on the descriptor.
    public enum Readiness: Sendable, Hashable {
        /// Data to read, or the peer hung up or failed (a `recv` tells which).
        case readable
        /// Room to write again, once after each `armWritable()`.
        case writable
    }

    let id: UInt64
    /// The descriptor, for writing from any thread; valid until `cancel()` returns.
    public let fd: Int32
    private let core: ConnectionCore
    private let isCancelled = Atomic<Bool>(false)

    init(core: ConnectionCore, id: UInt64, fd: Int32) {
        self.core = core
        self.id = id
        self.fd = fd
    }

    deinit { cancel() }

    /// Asks for one `.writable` when the descriptor can take data again (after `EAGAIN`); asking twice before the
    /// loop has seen the first asks once.
    public func armWritable() {
        guard !isCancelled.load(ordering: .relaxed) else { return }
        core.fileCommand(.armWritable(id))
    }

    /// Stops polling and closes the descriptor on the loop thread (at once when called there, or when the
    /// connection is closed); the handler is not called after a cancel made on the loop thread. Safe to call twice.
    public func cancel() {
        guard !isCancelled.exchange(true, ordering: .relaxed) else { return }
        core.fileCommand(.unwatch(id, fd: fd))
    }
}

extension BusConnection {
    /// Polls `fd` (which the watch now owns) on the loop thread: `handler` runs there, and must not block, each
    /// time the descriptor is readable (or hung up), and once per `armWritable()` when it is writable again. Use a
    /// non-blocking descriptor. When the connection is already closed the descriptor is never polled.
    public func watch(_ fd: Int32, handler: @escaping @Sendable (FileWatch.Readiness) -> Void) -> FileWatch {
        core.watch(fd, handler: handler)
    }
}

extension ConnectionCore {
    /// A descriptor the loop polls, with its handler; loop thread only.
    struct WatchedFile {
        let fd: Int32
        let handler: @Sendable (FileWatch.Readiness) -> Void
        var wantsWritable = false
    }

    /// What `FileWatch` asks of the loop.
    enum FileCommand: Sendable {
        case watch(UInt64, fd: Int32, @Sendable (FileWatch.Readiness) -> Void)
        case armWritable(UInt64)
        case unwatch(UInt64, fd: Int32)
    }

    func watch(_ fd: Int32, handler: @escaping @Sendable (FileWatch.Readiness) -> Void) -> FileWatch {
        let id = nextFileWatchID.add(1, ordering: .relaxed).newValue
        fileCommand(.watch(id, fd: fd, handler))
        return FileWatch(core: self, id: id, fd: fd)
    }

    /// Carries out `command` now on the loop thread, else through the inbox.
    func fileCommand(_ command: FileCommand) {
        if isOnLoopThread { perform(command) } else { submit(.file(command)) }
    }

    /// A command the closed connection will never carry out: an unwatched descriptor is closed here.
    func rejectFileCommand(_ command: FileCommand) {
        if case .unwatch(_, let fd) = command { _ = Glibc.close(fd) }
    }
}
