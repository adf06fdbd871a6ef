import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Carries each guest serial port's controller to its own connection on RootCanal's HCI port and back: bytes from
/// the guest as they come, RootCanal's packets whole and through `ControllerStream`.
///
/// One thread and one poll(2) loop for every controller, so the streams' order is the loop's order. Why a relay
/// and not qemu straight onto RootCanal: RootCanal 1.10.0 wrote each packet's indicator and body in two sends with
/// Nagle's algorithm on, which against a delayed ACK cost ~40 ms per HCI round trip (measured: a median of 44 ms).
/// The relay acknowledges at once (TCP_QUICKACK after every read: a median of 5 ms, RootCanal's own pace) and hands
/// qemu each packet in one write.
struct H4Relay: Sendable {
    /// How the loop ended.
    enum Outcome: Sendable, Equatable {
        /// `stop` was written to: the run is over.
        case stopped
        /// RootCanal closed controller `index`'s connection: it stopped, or dropped the controller.
        case controllerClosed(index: Int)
        /// Controller `index`'s stream had `byte` where a packet indicator belongs.
        case outOfStep(index: Int, byte: UInt8)
        /// A call failed.
        case failed(String)
    }

    /// One controller: its RootCanal connection, the port qemu's serial device connects to, and what is in flight.
    struct Link: Sendable {
        var controller: Int32
        var listener: Int32
        var guest: Int32 = -1
        var framer = H4Framer()
        var stream = ControllerStream()
        var toGuest: [UInt8] = []
        var toController: [UInt8] = []
        var packetsToGuest = 0
        var bytesToController = 0
    }

    /// The controllers, in hciN order.
    private(set) var links: [Link]
    /// The read end of a pipe; a byte (or its closing) ends the loop.
    let stop: Int32

    /// A relay over connections already made: `controllers[i]` to RootCanal, `listeners[i]` for qemu's port i.
    init(controllers: [Int32], listeners: [Int32], stop: Int32) {
        links = zip(controllers, listeners).map { Link(controller: $0, listener: $1) }
        self.stop = stop
        for link in links { Self.setNonBlocking(link.controller) }
    }

    /// One line per controller: what went each way and what was changed.
    var report: [String] {
        links.enumerated().map { index, link in
            "controller \(index): \(link.packetsToGuest) packets to the guest, \(link.bytesToController) bytes to "
                + "RootCanal; LE Ping cleared \(link.stream.pingsCleared)x, remote features held "
                + "\(link.stream.featuresHeld)x"
        }
    }

    /// Relays until `stop` is written to or a controller's connection ends.
    mutating func run() -> Outcome {
        let clock = ContinuousClock()
        while true {
            let now = clock.now
            for index in links.indices {
                for packet in links[index].stream.due(at: now) {
                    links[index].toGuest += packet
                    links[index].packetsToGuest += 1
                }
                if let failure = flush(index) { return failure }
            }
            var fds = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
            for link in links {
                let accepting = link.guest < 0
                fds.append(
                    pollfd(fd: accepting ? link.listener : link.guest, events: Self.events(link.toGuest), revents: 0))
                fds.append(pollfd(fd: link.controller, events: Self.events(link.toController), revents: 0))
            }
            let deadline = links.compactMap(\.stream.nextDue).min()
            let timeout = deadline.map { Self.milliseconds(until: $0, from: now) } ?? -1
            if poll(&fds, nfds_t(fds.count), timeout) < 0 {
                if errno == EINTR { continue }
                return .failed("poll: \(String(cString: strerror(errno)))")
            }
            if fds[0].revents != 0 { return .stopped }
            for index in links.indices {
                let guestSide = fds[1 + 2 * index]
                let controllerSide = fds[2 + 2 * index]
                if guestSide.revents != 0 {
                    if links[index].guest < 0 {
                        acceptGuest(index)
                    } else {
                        readGuest(index)
                    }
                }
                if controllerSide.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    if let outcome = readController(index, at: clock.now) { return outcome }
                }
            }
        }
    }

    private static func events(_ pending: [UInt8]) -> Int16 {
        Int16(pending.isEmpty ? POLLIN : POLLIN | POLLOUT)
    }

    private static func milliseconds(
        until deadline: ContinuousClock.Instant, from now: ContinuousClock.Instant
    ) -> Int32 {
        let left = now.duration(to: deadline)
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    private static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    private mutating func acceptGuest(_ index: Int) {
        let fd = accept(links[index].listener, nil, nil)
        guard fd >= 0 else { return }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        Self.setNonBlocking(fd)
        LoopbackTCP.setOption(fd, TCP_NODELAY)
        links[index].guest = fd
    }

    private mutating func readGuest(_ index: Int) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(links[index].guest, &buffer, buffer.count, 0)
        if count > 0 {
            links[index].toController += buffer.prefix(count)
            links[index].bytesToController += count
        } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
            // qemu closed its end: the VM is going; RootCanal's side stays until the run stops.
            close(links[index].guest)
            links[index].guest = -1
            links[index].toGuest.removeAll()
        }
    }

    private mutating func readController(_ index: Int, at now: ContinuousClock.Instant) -> Outcome? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(links[index].controller, &buffer, buffer.count, 0)
        if count == 0 { return .controllerClosed(index: index) }
        if count < 0 {
            return errno == EAGAIN || errno == EINTR ? nil : .controllerClosed(index: index)
        }
        // Acknowledge now, not after the delayed-ACK timer: RootCanal's next send waits for this ACK (tcp(7)).
        LoopbackTCP.setOption(links[index].controller, TCP_QUICKACK)
        links[index].framer.append(buffer.prefix(count))
        do {
            while let packet = try links[index].framer.next() {
                links[index].stream.received(packet, at: now)
            }
        } catch {
            return .outOfStep(index: index, byte: error.byte)
        }
        return nil
    }

    /// Writes what each side can take now.
    private mutating func flush(_ index: Int) -> Outcome? {
        if links[index].guest >= 0, !links[index].toGuest.isEmpty {
            let written = links[index].toGuest.withUnsafeBytes {
                send(links[index].guest, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written > 0 { links[index].toGuest.removeFirst(written) }
        }
        if !links[index].toController.isEmpty {
            let written = links[index].toController.withUnsafeBytes {
                send(links[index].controller, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                links[index].toController.removeFirst(written)
            } else if written < 0 && errno != EAGAIN && errno != EINTR {
                return .controllerClosed(index: index)
            }
        }
        return nil
    }
}
