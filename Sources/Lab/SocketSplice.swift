import FoundationEssentials
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Joins stream connections across a boundary a socket cannot cross by itself: each connection that comes in at an
/// entrance is paired with one its `dial` opens, and bytes are copied both ways until either end closes. One thread
/// and one poll(2) loop for every pair.
///
/// Airs on several machines meet through two of these (docs/lab.md, "Airs on several machines"): in the air's
/// network namespace, between a path in the results directory and RootCanal's LE link port, and in `LabMachine`, on
/// the host's network, between the other air's TCP port and that path.
final class SocketSplice: Sendable {
    /// Where connections come in, and how each finds its other end.
    struct Entrance: Sendable {
        /// Where an entrance's connections come from.
        enum Source: Sendable {
            /// Accepted on a listening socket, which the splice closes when it stops.
            case listener(Int32)
            /// Opened by the splice itself, tried like `dial`, and opened again a second after the pair closes.
            case connect(@Sendable () throws(TCPEndpoint.Failure) -> Int32)
        }

        /// What the log calls a connection through it.
        let name: String
        /// Where its connections come from.
        let source: Source
        /// Opens the other end; tried again every half second while it fails, for `patience`.
        let dial: @Sendable () throws(TCPEndpoint.Failure) -> Int32
        /// How long a connection waits for its other end before it is given up (the other lab may still be booting).
        let patience: Duration
    }

    private let entrances: [Entrance]
    private let log: @Sendable (String) -> Void
    private let stopPipe: [Int32]
    /// The loop's thread, once `start` ran it. Set once, by `start`.
    private let loop = Mutex<ThreadJob<Void>?>(nil)

    /// A splice over `entrances`, reporting each connection's life to `log`; `start` runs it.
    init(entrances: [Entrance], log: @escaping @Sendable (String) -> Void) throws(TCPEndpoint.Failure) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw TCPEndpoint.Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        self.entrances = entrances
        self.log = log
        stopPipe = fds
    }

    /// Runs the loop on a thread of its own until `stop`; throws when no thread can be started.
    func start() throws(TCPEndpoint.Failure) {
        do {
            let job = try ThreadJob { [self] in run() }
            loop.withLock { $0 = job }
        } catch {
            throw TCPEndpoint.Failure(description: "the splice's \(error)")
        }
    }

    /// Ends the loop, closing every connection and listener, and waits for it.
    func stop() {
        _ = write(stopPipe[1], "x", 1)
        loop.withLock { $0 }?.wait()
        stopPipe.forEach { close($0) }
    }

    /// A connection waiting for its other end; an entrance that connects by itself has no `fd` until it has.
    private struct Pending {
        var fd: Int32?
        let entrance: Int
        let since: ContinuousClock.Instant
        var nextAttempt: ContinuousClock.Instant
    }

    /// Two joined ends and what went each way.
    private struct Pair {
        let accepted: Int32
        let dialed: Int32
        let entrance: Int
        var bytesIn = 0
        var bytesOut = 0
    }

    private func run() {
        let clock = ContinuousClock()
        var pending: [Pending] = []
        var pairs: [Pair] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        defer {
            for pair in pairs {
                close(pair.accepted)
                close(pair.dialed)
            }
            for connection in pending { if let fd = connection.fd { close(fd) } }
            for entrance in entrances { if case .listener(let fd) = entrance.source { close(fd) } }
        }
        for (index, entrance) in entrances.enumerated() {
            if case .connect = entrance.source {
                pending.append(Pending(fd: nil, entrance: index, since: clock.now, nextAttempt: clock.now))
            }
        }
        while true {
            var fds = [pollfd(fd: stopPipe[0], events: Int16(POLLIN), revents: 0)]
            // An entrance that connects by itself has no listener: poll(2) skips a negative descriptor.
            fds += entrances.map { entrance in
                if case .listener(let fd) = entrance.source {
                    pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                } else {
                    pollfd(fd: -1, events: 0, revents: 0)
                }
            }
            for pair in pairs {
                fds.append(pollfd(fd: pair.accepted, events: Int16(POLLIN), revents: 0))
                fds.append(pollfd(fd: pair.dialed, events: Int16(POLLIN), revents: 0))
            }
            guard poll(&fds, nfds_t(fds.count), 200) >= 0 || errno == EINTR else {
                log("the splice's poll failed: \(String(cString: strerror(errno)))")
                return
            }
            if fds[0].revents != 0 { return }
            for (index, entrance) in entrances.enumerated() where fds[1 + index].revents & Int16(POLLIN) != 0 {
                guard case .listener(let listener) = entrance.source else { continue }
                let fd = accept(listener, nil, nil)
                if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                if fd >= 0 {
                    pending.append(Pending(fd: fd, entrance: index, since: clock.now, nextAttempt: clock.now))
                }
            }
            // Each pair's two descriptors follow the entrances', in pair order; a pair that ends is dropped after
            // the pass, so the indices hold.
            var ended = Set<Int>()
            for (index, pair) in pairs.enumerated() {
                let base = 1 + entrances.count + 2 * index
                for (offset, from, to) in [(0, pair.accepted, pair.dialed), (1, pair.dialed, pair.accepted)]
                where fds[base + offset].revents != 0 && !ended.contains(index) {
                    let count = recv(from, &buffer, buffer.count, 0)
                    if count < 0 && errno == EINTR { continue }
                    if count > 0, Self.sendAll(to, buffer[..<count]) {
                        if offset == 0 { pairs[index].bytesIn += count } else { pairs[index].bytesOut += count }
                    } else {
                        ended.insert(index)
                    }
                }
            }
            for index in ended.sorted(by: >) {
                let pair = pairs.remove(at: index)
                close(pair.accepted)
                close(pair.dialed)
                log(
                    "\(entrances[pair.entrance].name): closed after \(pair.bytesIn) bytes in, \(pair.bytesOut) out")
                // Again after a second: an other end that takes connections and drops them must not spin the loop.
                if case .connect = entrances[pair.entrance].source {
                    pending.append(
                        Pending(
                            fd: nil, entrance: pair.entrance, since: clock.now, nextAttempt: clock.now + .seconds(1)))
                }
            }
            let now = clock.now
            var waiting: [Pending] = []
            for var connection in pending {
                guard connection.nextAttempt <= now else {
                    waiting.append(connection)
                    continue
                }
                let entrance = entrances[connection.entrance]
                do throws(TCPEndpoint.Failure) {
                    if connection.fd == nil, case .connect(let open) = entrance.source { connection.fd = try open() }
                    guard let fd = connection.fd else { continue }
                    let dialed = try entrance.dial()
                    pairs.append(Pair(accepted: fd, dialed: dialed, entrance: connection.entrance))
                    log("\(entrance.name): connected")
                } catch {
                    if now - connection.since >= entrance.patience {
                        if let fd = connection.fd { close(fd) }
                        log("\(entrance.name): gave up after \(entrance.patience): \(error.description)")
                    } else {
                        connection.nextAttempt = now + .milliseconds(500)
                        waiting.append(connection)
                    }
                }
            }
            pending = waiting
        }
    }

    /// Writes all of `bytes`; false when the other end is gone, or has taken nothing for `stall` (a peer that
    /// stopped reading must not hold the loop, and with it every other pair and `stop`).
    private static func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>, stall: Int32 = 10_000) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes {
                send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if sent < 0 && errno == EINTR { continue }
            if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
                guard poll(&fds, 1, stall) == 1 else { return false }
                continue
            }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}
