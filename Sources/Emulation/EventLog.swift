import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The event log of `blemu run --events FILE|-`: one JSON line per event (`EventLineEncoder`), written with one
/// `write(2)` each and no buffering, so a test or `tail -f` sees every line as soon as it happens.
public final class EventLog: Sendable {
    /// Why the log cannot be opened.
    public struct OpenError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The path and the system's reason.
        public var description: String
    }

    /// The descriptor, -1 once closed; the lock also keeps lines from interleaving.
    private let descriptor: Mutex<Int32>
    private let ownsDescriptor: Bool
    private let observer: (@Sendable (EventRecord) -> Void)?

    /// A log appending to `path` (created if missing), or writing to standard output for `-`.
    /// Throws `OpenError` when the file cannot be opened.
    public init(path: String) throws(OpenError) {
        if path == "-" {
            descriptor = Mutex(STDOUT_FILENO)
            ownsDescriptor = false
        } else {
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw OpenError(description: "\(path): \(String(cString: strerror(errno)))") }
            descriptor = Mutex(fd)
            ownsDescriptor = true
        }
        observer = nil
    }

    /// A log that writes nothing and hands each record to `observer`: for tests and embedding programs.
    public init(observer: @escaping @Sendable (EventRecord) -> Void) {
        descriptor = Mutex(-1)
        ownsDescriptor = false
        self.observer = observer
    }

    /// Records an event at `time` (now by default). A failed write is dropped: the log must never stop the device.
    public func record(_ event: EmulationEvent, at time: Date = Date()) {
        let record = EventRecord(time: time, event: event)
        observer?(record)
        let line = Array((EventLineEncoder.encode(record) + "\n").utf8)
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            var written = 0
            while written < line.count {
                let result = line[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else { return }
                written += result
            }
        }
    }

    /// Closes the file; later records are dropped. Standard output stays open.
    public func close() {
        descriptor.withLock { fd in
            if ownsDescriptor && fd >= 0 { closeDescriptor(fd) }
            fd = -1
        }
    }

    deinit { close() }
}

/// `close(2)`, out of reach inside a type with its own `close()`.
func closeDescriptor(_ fd: Int32) { _ = close(fd) }
