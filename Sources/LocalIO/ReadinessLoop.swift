import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits, for async code, until a descriptor is ready to read or write: one thread sleeps in `poll` for every waiter
/// and resumes a waiter's continuation when one of its descriptors is ready, when its deadline passes, or when the
/// loop stops. What a blocking `read` on a thread of its own did, without a thread per descriptor, without blocking
/// Swift's cooperative pool, and without a thread waiting on a semaphore for an async answer.
///
/// A descriptor is waited on by one waiter at a time, and watched only while that wait lasts: one closed after its
/// wait ended is never polled. `poll`, not epoll: Swift's Glibc module has no epoll, and the control socket's few
/// dozen connections at most are what it serves.
package final class ReadinessLoop: Sendable {
    /// What to wait for.
    package enum Event: Sendable {
        /// Bytes to read, an end of file, or an error.
        case readable
        /// Room to write, or an error.
        case writable
    }

    /// How a wait ended.
    package enum Outcome: Hashable, Sendable {
        /// This descriptor is ready (or has an error or hang-up, which its next call reports).
        case ready(Int32)
        /// The deadline passed first.
        case timedOut
        /// The loop stopped: nothing will be ready any more.
        case stopped
    }

    private struct Waiter {
        var descriptors: [Int32]
        var events: Int16
        var deadline: ContinuousClock.Instant?
        var continuation: CheckedContinuation<Outcome, Never>
    }

    private struct State {
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        var isStopped = false
        /// The pipe is closed: nothing may write to its number, which the system may have given to another file.
        var isClosed = false
    }

    /// A pipe the loop also watches: a byte written makes it look at the waiters again (a new one, `stop`).
    private let wakeReader: Int32
    private let wakeWriter: Int32
    private let state = Mutex(State())

    /// Why the loop could not start.
    package struct StartError: Error, CustomStringConvertible {
        /// The failing call and the system's reason.
        package var description: String
    }

    /// A loop with its thread running. Throws `StartError` when no pipe or no thread can be had (out of descriptors,
    /// at the thread limit).
    package init() throws(StartError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw StartError(description: "pipe: \(String(cString: strerror(errno)))") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        (wakeReader, wakeWriter) = (ends[0], ends[1])
        do { try DetachedThread.start { [self] in run() } } catch {
            SocketCalls.close(wakeReader)
            SocketCalls.close(wakeWriter)
            throw StartError(description: error.description)
        }
    }

    /// Waits until one of `descriptors` is ready for `event`, until `deadline` (none: as long as it takes), or until
    /// the loop stops. A descriptor that cannot be polled (closed) is reported ready, so the caller's next call on
    /// it reports the error.
    package func wait(
        for event: Event, on descriptors: [Int32], until deadline: ContinuousClock.Instant? = nil
    ) async -> Outcome {
        await withCheckedContinuation { continuation in
            let isStopped = state.withLock { state -> Bool in
                guard !state.isStopped else { return true }
                state.waiters[state.nextID] = Waiter(
                    descriptors: descriptors, events: Int16(event == .readable ? POLLIN : POLLOUT),
                    deadline: deadline, continuation: continuation)
                state.nextID += 1
                poke(state)
                return false
            }
            if isStopped { continuation.resume(returning: .stopped) }
        }
    }

    /// Stops the loop: every waiter, and every later wait, ends with `.stopped`; the thread closes its pipe.
    package func stop() {
        state.withLock { state in
            state.isStopped = true
            poke(state)
        }
    }

    /// Wakes the loop's `poll`; called with the state locked, so the pipe is not closed meanwhile.
    private func poke(_ state: borrowing State) {
        guard !state.isClosed else { return }
        var byte: UInt8 = 1
        _ = write(wakeWriter, &byte, 1)
    }

    private func run() {
        var scratch = [UInt8](repeating: 0, count: 64)
        while true {
            // What to watch this round: the pipe, then each waiter's descriptors, in order.
            let (watched, owners, deadline) = state.withLock { state in
                var watched = [pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)]
                var owners: [Int] = [-1]
                for (id, waiter) in state.waiters {
                    for descriptor in waiter.descriptors {
                        watched.append(pollfd(fd: descriptor, events: waiter.events, revents: 0))
                        owners.append(id)
                    }
                }
                return (watched, owners, state.waiters.values.compactMap(\.deadline).min())
            }
            var polled = watched
            let count = poll(&polled, nfds_t(polled.count), Self.timeout(until: deadline))
            // A failure other than a signal (ENOMEM) reports nothing about the descriptors: this round's waiters
            // end as if stopped (a connection closes), and the loop goes on for later waits.
            let failed = count < 0 && errno != EINTR
            if polled[0].revents != 0 {
                while scratch.withUnsafeMutableBytes({ read(wakeReader, $0.baseAddress, $0.count) }) > 0 {}
            }
            let (resumed, isStopped) = state.withLock {
                state -> ([(CheckedContinuation<Outcome, Never>, Outcome)], Bool) in
                var resumed: [(CheckedContinuation<Outcome, Never>, Outcome)] = []
                for index in polled.indices.dropFirst() where polled[index].revents != 0 {
                    guard let waiter = state.waiters.removeValue(forKey: owners[index]) else { continue }
                    resumed.append((waiter.continuation, .ready(polled[index].fd)))
                }
                let now = ContinuousClock.now
                for (id, waiter) in state.waiters
                where state.isStopped || failed || (waiter.deadline.map { $0 <= now } ?? false) {
                    state.waiters[id] = nil
                    resumed.append((waiter.continuation, state.isStopped || failed ? .stopped : .timedOut))
                }
                return (resumed, state.isStopped)
            }
            for (continuation, outcome) in resumed { continuation.resume(returning: outcome) }
            if isStopped { break }
            // A failure that repeats must not spin: the next round waits a moment, as `accept` does at EMFILE.
            if failed { usleep(10_000) }
        }
        // Stopped: whoever still waits is told, and a later wait finds `isStopped`.
        let left = state.withLock { state -> [CheckedContinuation<Outcome, Never>] in
            state.isStopped = true
            state.isClosed = true
            SocketCalls.close(wakeReader)
            SocketCalls.close(wakeWriter)
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.continuation)
        }
        for continuation in left { continuation.resume(returning: .stopped) }
    }

    /// `poll`'s timeout in milliseconds for `deadline`, rounded up so a wake never comes before it; -1 for none.
    private static func timeout(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return 0 }
        // Past `Int32.max` milliseconds (24 days) the loop wakes early and looks again: no overflow.
        guard left < .milliseconds(Int32.max) else { return Int32.max }
        let (seconds, attoseconds) = left.components
        let milliseconds = seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}
