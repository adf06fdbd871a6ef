import LocalIO
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One reader of an `EventFeed`: the records published since it began, held until `take`, and a pipe whose read
/// end becomes readable when there are some, so a thread can `poll` it beside a socket.
public final class EventFollower: Sendable {
    /// Why a follower could not be made.
    public struct PipeError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The system's reason.
        public var description: String
    }

    /// Records held for a follower that has not taken them; past this, records are dropped and counted: about 1 MiB
    /// of lines, so a stalled reader cannot make the device hold memory without bound.
    public static let maximumBacklog = 4096

    private struct State {
        var records: [EventRecord] = []
        var dropped = 0
        /// A byte is in the pipe (or about to be): later offers need not write another.
        var isSignalled = false
    }

    private let state = Mutex(State())
    /// The pipe's read end: readable while records wait. Non-blocking, close-on-exec, like the write end.
    public let wakeDescriptor: Int32
    private let signalDescriptor: Int32

    init() throws(PipeError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw PipeError(description: "pipe: \(String(cString: strerror(errno)))") }
        // pipe2 is not in Swift's Glibc module; blemu starts no program after it serves, so setting close-on-exec
        // a moment later leaves nothing to inherit the ends.
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        wakeDescriptor = ends[0]
        signalDescriptor = ends[1]
    }

    deinit {
        SocketCalls.close(wakeDescriptor)
        SocketCalls.close(signalDescriptor)
    }

    /// Holds `record` (or counts it dropped when the backlog is full) and makes the pipe readable if it was not.
    func offer(_ record: EventRecord) {
        let wake = state.withLock { state -> Bool in
            if state.records.count < Self.maximumBacklog {
                state.records.append(record)
            } else {
                state.dropped += 1
            }
            defer { state.isSignalled = true }
            return !state.isSignalled
        }
        // A full pipe (EAGAIN) already wakes the reader; nothing else can fail on a pipe we hold both ends of.
        if wake {
            var byte: UInt8 = 1
            _ = writeDescriptor(signalDescriptor, &byte, 1)
        }
    }

    /// The records held since the last take, oldest first, and how many were dropped behind them; empties the pipe
    /// first, so a record offered meanwhile either comes now or signals again.
    public func take() -> (records: [EventRecord], dropped: Int) {
        var scratch = [UInt8](repeating: 0, count: 64)
        while scratch.withUnsafeMutableBytes({ read(wakeDescriptor, $0.baseAddress, $0.count) }) > 0 {}
        return state.withLock { state in
            defer {
                state.records = []
                state.dropped = 0
                state.isSignalled = false
            }
            return (state.records, state.dropped)
        }
    }
}
