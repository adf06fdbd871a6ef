import BlueZTesting
import DBus
import GATTModel
import Peripheral
import Testing

// The `disconnect` fault over D-Bus: blemu asks bluetoothd to end links with Device1.Disconnect.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .serialized, .timeLimit(.minutes(1)))
struct BlueZBackendLinkTests {
    @Test func disconnectingEveryCentralCallsDevice1DisconnectOnEachConnectedDevice() async throws {
        let rig = try await BackendRig(HeartRate.service, values: ["location": [1]])
        let reader = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let subscriber = try await rig.fake.connect(address: "11:22:33:44:55:02")
        let idle = try await rig.fake.connect(address: "11:22:33:44:55:03")
        #expect(await rig.fake.read("2a38", by: reader) == .success([1]))
        #expect(await rig.fake.subscribe("2a37", by: subscriber) == nil)
        #expect(await rig.waitForSubscribers(1, of: HeartRate.measurement))

        let dropped = try await rig.manager.disconnect()

        // Every connected device of the adapter, also the one that never made a request.
        #expect(dropped == [reader, subscriber, idle].map(\.path.rawValue))
        for central in [reader, subscriber, idle] {
            #expect(await rig.fake.disconnectCalls[central.path] == 1)
            #expect(await !rig.fake.isConnected(central))
        }
        // bluetoothd closed the notify socket as the last subscriber left: the subscription ends in blemu too.
        #expect(await rig.waitForSubscribers(0, of: HeartRate.measurement))
        var notifications = subscriber.notifications.makeAsyncIterator()
        #expect(await notifications.next() == nil)
        #expect(await rig.fake.notifyCount("2a37") == (0, false))
        await rig.stop()
    }

    @Test func disconnectingOneCentralLeavesTheOthersConnected() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let first = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let second = try await rig.fake.connect(address: "11:22:33:44:55:02")
        let dropped = try await rig.manager.disconnect(Central(id: first.path.rawValue))
        #expect(dropped == [first.path.rawValue])
        #expect(await !rig.fake.isConnected(first))
        #expect(await rig.fake.isConnected(second))
        #expect(await rig.fake.disconnectCalls[second.path] == nil)
        // Nobody left to drop after the rest go: no call, no error.
        #expect(try await rig.manager.disconnect(Central(id: second.path.rawValue)) == [second.path.rawValue])
        #expect(try await rig.manager.disconnect() == [])
        await rig.stop()
    }
}
