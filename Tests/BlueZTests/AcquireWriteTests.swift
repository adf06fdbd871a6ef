import BlueZTesting
import GATTModel
import Glibc
@_spi(Backend) import Peripheral
import Synchronization
import Testing

@testable import BlueZ

/// `AcquireWrite` against the fake bluetoothd (5.66 `chrc_write_cb`, `acquire_write_reply`), and the socket it
/// hands over.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .serialized, .timeLimit(.minutes(1)))
struct AcquireWriteTests {
    static let stream = Characteristic(
        id: "stream", uuid: BluetoothUUID(0x2A3D), properties: [.writeWithoutResponse], maximumLength: 20)
    static let both = Characteristic(
        id: "both", uuid: BluetoothUUID(0x2A3E), properties: [.write, .writeWithoutResponse])
    static let service = Service(id: "s", uuid: BluetoothUUID(0x180D), characteristics: [stream, both])

    @Test func onlyWriteWithoutResponseCharacteristicsOfferItAndOnlyWhenAskedTo() async throws {
        let on = try await BackendRig(Self.service, useAcquireWrite: true)
        #expect(await on.fake.characteristic("2a3d")?.offersAcquireWrite == true)
        // A Write Request's offset (prepared writes) would be lost on the socket.
        #expect(await on.fake.characteristic("2a3e")?.offersAcquireWrite == false)
        await on.stop()
        let off = try await BackendRig(Self.service)
        #expect(await off.fake.characteristic("2a3d")?.offersAcquireWrite == false)
        await off.stop()
    }

    @Test func writesStreamThroughOneSocketAcquiredOnTheFirstWrite() async throws {
        let rig = try await BackendRig(Self.service, useAcquireWrite: true)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01", mtu: 100)
        for byte: UInt8 in 1...3 {
            #expect(await rig.fake.write("2a3d", [byte, byte], withResponse: false, by: central) == nil)
        }
        // An empty write is a datagram of its own, not the end of the stream.
        #expect(await rig.fake.write("2a3d", [], withResponse: false, by: central) == nil)
        #expect(await rig.fake.write("2a3d", [9], withResponse: false, by: central) == nil)
        #expect(await rig.manager.requestCounts(within: .seconds(5)) { $0.requests == 5 && $0.withoutReply == 5 })
        #expect(rig.store.value(of: Self.stream) == [9])
        #expect(await rig.fake.callsToApp["AcquireWrite"] == 1)
        #expect(await rig.fake.callsToApp["WriteValue"] == nil)
        #expect(await rig.fake.hasWriteStream("2a3d"))
        await rig.stop()
    }

    @Test func aRejectedStreamedWriteIsCountedAndTheStreamGoesOn() async throws {
        let rig = try await BackendRig(Self.service, useAcquireWrite: true)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01", mtu: 100)
        // Longer than the declared maximum of 20: the central already heard success from bluetoothd, as with any
        // Write Command, so the engine can only refuse to store it.
        #expect(await rig.fake.write("2a3d", [UInt8](repeating: 7, count: 21), withResponse: false, by: central) == nil)
        #expect(await rig.fake.write("2a3d", [1], withResponse: false, by: central) == nil)
        // Answered (with no reply) once the handler has decided: stored or refused.
        #expect(await rig.manager.requestCounts(within: .seconds(5)) { $0.answered == 2 })
        #expect(rig.store.value(of: Self.stream) == [1])
        #expect(rig.manager.requestCounts.rejected == 1)
        await rig.stop()
    }

    @Test func theSocketTellsAnEmptyDatagramFromTheEndOfTheStream() async throws {
        let bus = try PrivateBus()
        let connection = try bus.connect("socket")
        defer { connection.close() }
        let pair = try AcquiredSocket.makePair()
        // The loop thread hands over each datagram, then the end; the test awaits the end, not a time.
        let (events, continuation) = AsyncStream<[UInt8]?>.makeStream()
        let socket = AcquiredSocket(
            fd: pair.local, on: connection, datagramLimit: BlueZBackend.writeDatagramLimit,
            onDatagram: { continuation.yield($0) },
            onClosed: {
                continuation.yield(nil)
                continuation.finish()
            })
        for datagram: [UInt8] in [[1, 2], [], Array(repeating: 0xAB, count: 514)] {
            #expect(datagram.withUnsafeBytes { send(pair.remote, $0.baseAddress, $0.count, 0) } == datagram.count)
        }
        close(pair.remote)
        var received: [[UInt8]?] = []
        for await event in events { received.append(event) }
        #expect(received == [[1, 2], [], Array(repeating: 0xAB, count: 514), nil])
        #expect(socket.send([1]) == .failed("the acquired socket is closed"))
    }

    @Test func aFullSocketSaysWouldBlockThenWritableOnceItDrains() async throws {
        let bus = try PrivateBus()
        let connection = try bus.connect("socket")
        defer { connection.close() }
        let pair = try AcquiredSocket.makePair()
        defer { close(pair.remote) }
        let (writable, continuation) = AsyncStream<Void>.makeStream()
        let socket = AcquiredSocket.forNotifications(
            fd: pair.local, on: connection, onWritable: { continuation.yield() }, onConfirm: {}, onClosed: {})
        var sent = 0
        while socket.send([UInt8](repeating: 0x42, count: 20)) == .sent { sent += 1 }
        #expect(sent > 0)
        // Reading what was sent makes room (the kernel says writable only once enough of it has drained).
        var buffer = [UInt8](repeating: 0, count: 20)
        var read = 0
        while recv(pair.remote, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 20 { read += 1 }
        #expect(read == sent)
        var iterator = writable.makeAsyncIterator()
        #expect(await iterator.next() != nil)
        #expect(socket.send([1]) == .sent)
        socket.close()
    }
}
