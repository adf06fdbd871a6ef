import BlueZTesting
import DBus
import Peripheral
import Testing

@testable import BlueZ

/// Connected devices as centrals: 5.66 names nobody on the notify paths, but each Device1 with `Connected` is one.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .serialized, .timeLimit(.minutes(1)))
struct BlueZBackendDeviceTests {
    private func connected(_ rig: BackendRig) async -> Set<String> {
        Set(await rig.manager.connectedCentrals.map(\.id))
    }

    @Test func eachConnectedDeviceIsACentralBesideTheOneThatStandsForEverySubscriber() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let first = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let second = try await rig.fake.connect(address: "11:22:33:44:55:02")
        let devices: Set = [first.path.rawValue, second.path.rawValue]
        #expect(await rig.events.wait(forCount: 2) { if case .centralConnected = $0 { true } else { false } })
        #expect(await connected(rig) == devices)
        #expect(await rig.fake.subscribe("2a37", by: first) == nil)
        #expect(await rig.fake.subscribe("2a37", by: second) == nil)
        #expect(await rig.waitForSubscribers(1, of: HeartRate.measurement))
        #expect(await connected(rig) == devices.union([Central.allSubscribersID]))
        await rig.fake.disconnect(first)
        #expect(
            await rig.events.wait(forCount: 1) {
                $0 == .centralDisconnected(Central(id: first.path.rawValue), reason: nil)
            })
        #expect(await connected(rig) == [second.path.rawValue, Central.allSubscribersID])
        // The other subscriber still gets what is sent to "*".
        #expect(await rig.manager.updateValue([7], for: HeartRate.measurement))
        #expect(await collect(1, of: second.notifications).map(\.value) == [[7]])
        await rig.stop()
    }

    @Test func aDeviceOfAnotherAdapterIsNoCentral() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let own = try await rig.fake.connect(address: "11:22:33:44:55:01")
        try await rig.fake.connection.export(
            "/org/bluez/hci1/dev_11_22_33_44_55_09",
            [
                Interface(
                    "org.bluez.Device1",
                    properties: [Property("Connected", signature: "b", get: { .boolean(true) })])
            ])
        // A device of this adapter connecting afterwards: its InterfacesAdded follows the other adapter's on the
        // same connection, so once it is reported the other one was seen, and not taken for a central.
        let later = try await rig.fake.connect(address: "11:22:33:44:55:02")
        #expect(await rig.events.wait(forCount: 1) { $0 == .centralConnected(Central(id: later.path.rawValue)) })
        #expect(await connected(rig) == [own.path.rawValue, later.path.rawValue])
        await rig.stop()
    }

    /// BlueZ 5.83+ says why a link went down (`Device1.Disconnected`, just before `Connected` turns false): the
    /// disconnect event carries it; before 5.83 nothing is said and the event has no reason.
    @Test func aDisconnectCarriesBluetoothdsReasonWhereItGivesOne() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let quiet = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.events.wait(forCount: 1) { $0 == .centralConnected(Central(id: quiet.path.rawValue)) })
        await rig.fake.disconnect(quiet)
        #expect(
            await rig.events.wait(forCount: 1) {
                $0 == .centralDisconnected(Central(id: quiet.path.rawValue), reason: nil)
            })

        await rig.fake.saysWhyLinksGoDown()
        let remote = try await rig.fake.connect(address: "11:22:33:44:55:02")
        let local = try await rig.fake.connect(address: "11:22:33:44:55:03")
        // Counted from the rig's start: the quiet device's connection and these two.
        #expect(await rig.events.wait(forCount: 3) { if case .centralConnected = $0 { true } else { false } })
        await rig.fake.disconnect(remote)
        let hungUp = DisconnectReason(
            name: "org.bluez.Reason.Remote", message: "Connection terminated by remote user")
        #expect(
            await rig.events.wait(forCount: 1) {
                $0 == .centralDisconnected(Central(id: remote.path.rawValue), reason: hungUp)
            })
        #expect(hungUp.code == "Remote" && hungUp.description == "Remote (Connection terminated by remote user)")
        // blemu asks for the disconnect (a `disconnect` fault, `ctl`): bluetoothd calls it the local host's.
        #expect(try await rig.manager.disconnect(Central(id: local.path.rawValue)) == [local.path.rawValue])
        #expect(
            await rig.events.wait(forCount: 1) {
                $0
                    == .centralDisconnected(
                        Central(id: local.path.rawValue),
                        reason: DisconnectReason(
                            name: "org.bluez.Reason.Local", message: "Connection terminated by local host"))
            })
        await rig.stop()
    }
}
