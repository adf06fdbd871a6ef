import Dispatch
import LocalIO
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The event log of `blemu run --events FILE|-`: one JSON line per event (`EventLineEncoder`), each written with
/// one `write(2)` as soon as the writer gets to it, so a test or `tail -f` sees every line as it happens.
///
/// `record` never blocks its caller: requests are answered on the D-Bus loop thread, and a slow reader of
/// `--events -` must not stall the bus. Lines go to a serial writer queue, in order; past `maximumPending`
/// lines not yet written, new lines are dropped and counted, and the count is written as a line of its own once
/// the writer catches up.
///
/// A write that fails (the reader of `-` went away: EPIPE; a full disk: ENOSPC; a read-only file system) never
/// stops the device: the first failure is said once on standard error with its reason, and from then on the lines
/// that could not be written are counted (`lostLines`), for `counters` and the run's last words. With SIGPIPE
/// ignored (`blemu run` ignores it), a closed pipe is such a failure instead of the end of the process.
///
/// Every record also goes to `feed`, file or not: the control socket's `events` reads the latest there, and follows.
public final class EventLog: Sendable {
    /// Why the log cannot be opened.
    public struct OpenError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The path and the system's reason.
        public var description: String
    }

    private struct Backlog {
        /// Lines handed to the writer and not written yet.
        var pending = 0
        /// Lines dropped since the last `lines-dropped` line.
        var unreported = 0
        /// Lines dropped since the log was opened.
        var dropped = 0
        /// Lines a failed write lost.
        var failed = 0
        /// Why the first write failed, once one has.
        var failure: String?
        /// Set when `close` stopped waiting for a reader that does not read: the lines still pending were counted
        /// as failed then, and the writer writes no more.
        var abandoned = false
        /// Lines the writer has finished with (written or failed): `close` waits while this moves.
        var finished = 0
    }

    /// Lines waiting for the writer before new ones are dropped (about 16 MiB of typical lines).
    public static let maximumPending = 65_536

    /// The descriptor, -1 once closed. Only the writer queue writes to it, and a write may block for as long as the
    /// reader sleeps, so it is an atomic, never a lock `record` could wait on.
    private let descriptor: Atomic<Int32>
    private let ownsDescriptor: Bool
    private let observer: (@Sendable (EventRecord) -> Void)?
    private let backlog = Mutex(Backlog())
    private let writer = DispatchQueue(label: "blemu.event-log")
    /// The latest records and the live followers (`events` on the control socket).
    public let feed = EventFeed()

    /// A log appending to `path` (created if missing), or writing to standard output for `-`.
    /// Throws `OpenError` when the file cannot be opened.
    public init(path: String) throws(OpenError) {
        if path == "-" {
            descriptor = Atomic(STDOUT_FILENO)
            ownsDescriptor = false
        } else {
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw OpenError(description: "\(path): \(String(cString: strerror(errno)))") }
            descriptor = Atomic(fd)
            ownsDescriptor = true
        }
        observer = nil
    }

    /// A log that writes no file: its records reach only `feed` (`blemu run --control` without `--events`).
    public init() {
        descriptor = Atomic(-1)
        ownsDescriptor = false
        observer = nil
    }

    /// A log that writes nothing and hands each record to `observer`: for tests and embedding programs.
    public init(observer: @escaping @Sendable (EventRecord) -> Void) {
        descriptor = Atomic(-1)
        ownsDescriptor = false
        self.observer = observer
    }

    /// How many lines were dropped since the log was opened, because the writer was `maximumPending` lines behind.
    public var droppedLines: Int { backlog.withLock { $0.dropped } }

    /// Every line the log did not write: dropped behind a slow reader, or lost to a failed write.
    public var lostLines: Int { backlog.withLock { $0.dropped + $0.failed } }

    /// Why writing failed ("Broken pipe"), or nil while every write has succeeded.
    public var writeFailure: String? { backlog.withLock { $0.failure } }

    /// Records an event at `time` (now by default), without waiting for the write. A failed write is dropped: the
    /// log must never stop the device.
    public func record(_ event: EmulationEvent, at time: WallTime = .now) {
        let record = EventRecord(time: time, event: event)
        observer?(record)
        feed.publish(record)
        guard descriptor.load(ordering: .acquiring) >= 0 else { return }
        let admitted = backlog.withLock { backlog -> Bool in
            guard backlog.pending < Self.maximumPending else {
                backlog.unreported += 1
                backlog.dropped += 1
                return false
            }
            backlog.pending += 1
            return true
        }
        guard admitted else { return }
        // Encoded by the writer too: `record` runs on the thread that answered the request (the D-Bus loop), and
        // the record already holds its time.
        writer.async { [self] in
            guard !backlog.withLock({ $0.abandoned }) else { return }
            write(EventLineEncoder.encode(record) + "\n")
            let dropped = backlog.withLock { backlog -> Int in
                backlog.pending -= 1
                backlog.finished += 1
                guard backlog.pending == 0 else { return 0 }
                defer { backlog.unreported = 0 }
                return backlog.unreported
            }
            if dropped > 0 {
                write(EventLineEncoder.encode(EventRecord(time: .now, event: .linesDropped(dropped))) + "\n")
            }
        }
    }

    /// Waits until every line recorded so far has been written.
    public func flush() {
        writer.sync {}
    }

    /// How long `close` waits for a reader that reads nothing by default: well within the 2 s a stopping process has
    /// before a service manager or a test harness gives up on it.
    public static let closingPatience: Duration = .milliseconds(1500)

    /// Writes what is pending, then closes the file; later records are dropped. Standard output stays open.
    ///
    /// A reader that stopped reading (a stalled `--events -` consumer, a FIFO nobody drains) holds the writer in
    /// `write(2)` for as long as it sleeps, and a stopping process must not wait on it. So `close` waits while lines
    /// keep being written, however many are pending, but once `patience` passes with not one line written, the lines
    /// still pending are counted as lost (`lostLines`, with a `writeFailure` saying why) and the writer, blocked or
    /// not, writes nothing more. The descriptor is then left open, since the blocked writer may still be in a
    /// `write(2)` on it; the process is about to exit.
    public func close(waitingAtMost patience: Duration = EventLog.closingPatience) {
        let drained = DispatchSemaphore(value: 0)
        writer.async { drained.signal() }
        var finished = backlog.withLock { $0.finished }
        while drained.wait(timeout: .now() + .milliseconds(Int(patience.seconds * 1000))) == .timedOut {
            let now = backlog.withLock { $0.finished }
            if now == finished {
                abandon(after: patience)
                return
            }
            finished = now
        }
        closeNow()
    }

    /// Stops writing for good: the pending lines are counted as lost, with the reason.
    private func abandon(after patience: Duration) {
        backlog.withLock { backlog in
            guard !backlog.abandoned else { return }
            backlog.abandoned = true
            backlog.failed += backlog.pending
            backlog.failure = backlog.failure ?? "nothing was read for \(patience.seconds) s at shutdown"
        }
        _ = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
    }

    // Every pending write holds the log, so by deinit nothing is pending; and deinit may run on the writer
    // queue itself (the last write released it), where `flush` would wait on itself.
    deinit { closeNow() }

    private func closeNow() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        if ownsDescriptor && fd >= 0 { SocketCalls.close(fd) }
    }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        let fd = descriptor.load(ordering: .acquiring)
        guard fd >= 0 else { return }
        // After a broken pipe nobody reads any more: count the lines without trying.
        guard backlog.withLock({ $0.failure == nil || $0.failure != Self.brokenPipe }) else {
            backlog.withLock { $0.failed += 1 }
            return
        }
        do { try LocalFile.writeAll(bytes, to: fd) } catch { failed(reason: error.description) }
    }

    private static let brokenPipe = String(cString: strerror(EPIPE))

    /// Counts a lost line; the first failure is said once on standard error, which the event log never uses.
    private func failed(reason: String) {
        let isFirst = backlog.withLock { backlog -> Bool in
            // Lines pending when `close` gave up were counted then, the one in the blocked write among them.
            guard !backlog.abandoned else { return false }
            backlog.failed += 1
            defer { backlog.failure = backlog.failure ?? reason }
            return backlog.failure == nil
        }
        guard isFirst else { return }
        let line = "blemu: event log: \(reason); the device keeps running and lost lines are counted\n"
        _ = Array(line.utf8).withUnsafeBytes { writeDescriptor(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

/// `write(2)`, out of reach inside a type with its own `write`.
func writeDescriptor(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, bytes, count) }
