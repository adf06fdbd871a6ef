import BlueZTesting
import DBus
import Glibc
import Synchronization
import Testing

/// Descriptors polled by the connection's loop beside the bus (`FileWatch`): their handlers run on the thread that
/// serves the bus's calls, writability is reported once per request, and a cancelled watch's descriptor is closed.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .timeLimit(.minutes(1)))
struct FileWatchTests {
    /// A non-blocking datagram pair: ours (to be watched) and the peer's (the test's).
    static func socketPair() throws -> (ours: Int32, peer: Int32) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        try #require(socketpair(AF_UNIX, type, 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    /// Whether the other end of `peer` was closed: the peer then sees a hang-up. (Asked of the peer, since the
    /// closed number itself may already belong to another test's file.)
    static func otherEndClosed(_ peer: Int32) -> Bool {
        var entry = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLHUP) != 0
    }

    @Test func aReadableDescriptorIsHandledOnTheThreadThatServesCalls() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let callThread = Mutex<UInt?>(nil)
        try pair.server.export(
            "/thread",
            [
                Interface(
                    "org.example.Thread1",
                    methods: [
                        Method("Note") { call in
                            callThread.withLock { $0 = UInt(pthread_self()) }
                            call.reply()
                        }
                    ])
            ])
        _ = try await pair.client.call(
            pair.server.uniqueName, path: "/thread", interface: "org.example.Thread1", member: "Note")
        let (ours, peer) = try Self.socketPair()
        defer { close(peer) }
        let (events, continuation) = AsyncStream<(bytes: [UInt8], thread: UInt)>.makeStream()
        let watch = pair.server.watch(ours) { readiness in
            guard readiness == .readable else { return }
            var buffer = [UInt8](repeating: 0, count: 8)
            let count = recv(ours, &buffer, buffer.count, 0)
            if count > 0 { continuation.yield((Array(buffer[..<count]), UInt(pthread_self()))) }
        }
        defer { watch.cancel() }
        let bytes: [UInt8] = [7, 8, 9]
        #expect(send(peer, bytes, bytes.count, 0) == 3)
        let event = try #require(await first(of: events))
        #expect(event.bytes == [7, 8, 9])
        #expect(event.thread == callThread.withLock { $0 })
    }

    @Test func writabilityIsReportedOncePerArming() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (ours, peer) = try Self.socketPair()
        defer { close(peer) }
        let writable = Counter()
        let (signals, continuation) = AsyncStream<Void>.makeStream()
        let watch = pair.server.watch(ours) { readiness in
            guard readiness == .writable else { return }
            writable.increment()
            continuation.yield()
        }
        defer { watch.cancel() }
        // An unarmed watch says nothing about a socket that could take data all along.
        _ = try await pair.server.nameOwner("org.freedesktop.DBus")
        #expect(writable.value == 0)
        watch.armWritable()
        #expect(await first(of: signals) != nil)
        // The socket stays writable, yet the loop, which has polled it again since (a round trip), says nothing more
        // until it is armed again.
        _ = try await pair.server.nameOwner("org.freedesktop.DBus")
        _ = try await pair.server.nameOwner("org.freedesktop.DBus")
        #expect(writable.value == 1)
        watch.armWritable()
        #expect(await first(of: signals) != nil)
        #expect(writable.value == 2)
    }

    @Test func aCancelledWatchClosesItsDescriptorAndIsNotCalledAgain() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (ours, peer) = try Self.socketPair()
        defer { close(peer) }
        let calls = Counter()
        let watch = pair.server.watch(ours) { _ in calls.increment() }
        watch.cancel()
        // The inbox is served in order: once this call's reply is back, the loop has closed the descriptor.
        _ = try await pair.server.nameOwner("org.freedesktop.DBus")
        #expect(Self.otherEndClosed(peer))
        #expect(calls.value == 0)
    }

    @Test func aWatchOnAClosedConnectionClosesItsDescriptorWhenCancelled() throws {
        let pair = try BusPair()
        pair.close()
        let (ours, peer) = try Self.socketPair()
        defer { close(peer) }
        let watch = pair.server.watch(ours) { _ in Issue.record("a closed connection polls nothing") }
        #expect(!Self.otherEndClosed(peer))
        watch.cancel()
        #expect(Self.otherEndClosed(peer))
    }
}
