import BlueZTesting
import DBus
import GATTModel
import Logging
import Peripheral
import Testing

@testable import BlueZ

// The peripheral's life around bluetoothd 5.66 on the fake: power cycles, and a restart of blemu itself.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .serialized, .timeLimit(.minutes(1)))
struct BlueZBackendLifecycleTests {
    static let advertisement = Advertisement(localName: "HR", serviceUUIDs: [BluetoothUUID(0x180D)])

    @Test func aPowerCycleKeepsTheApplicationAndPutsTheAdvertisementBackOnTheAir() async throws {
        let rig = try await BackendRig(HeartRate.service, values: ["location": [7]])
        try await rig.manager.startAdvertising(Self.advertisement)
        #expect(await rig.fake.advertisementsOnAir == 1)
        await rig.fake.setPowered(false)
        #expect(await rig.events.wait(for: .poweredOff))
        #expect(await !rig.manager.isAdvertising)
        await rig.fake.setPowered(true)
        #expect(await rig.events.wait(for: .poweredOn))
        // bluetoothd kept the registration but the controller lost the set: blemu registers it again.
        #expect(await rig.fake.until { $0.advertisementsOnAir == 1 })
        #expect(await rig.fake.advertisementRegistrations == 2)
        #expect(await rig.manager.isAdvertising)
        #expect(await rig.fake.registrationCount == 1)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.read("2a38", by: central) == .success([7]))
        await rig.stop()
    }

    @Test func subscriptionsDoNotSurviveBlemuLeavingTheBusAndResumeWhenTheCentralSubscribesAgain() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.subscribe("2a37", by: central) == nil)
        #expect(await rig.waitForSubscribers(1, of: HeartRate.measurement))
        // blemu dies: its connection closes without unregistering. 5.66 drops the application and, with its
        // services, every device's CCCD state for them.
        rig.backend.connection.close()
        #expect(await rig.fake.until { $0.registeredApplications.isEmpty })
        #expect(await rig.fake.notifyCount("2a37") == (0, false))

        // The next run restores the subscription as history only.
        var logger = Logger(label: "second-run")
        logger.logLevel = .critical
        let backend = try await BlueZBackend(bus: .address(rig.bus.address), logger: logger)
        let manager = PeripheralManager(
            backend: backend, restoring: RestoredState(subscriptions: ["measurement": [Central.allSubscribersID]]),
            logger: logger)
        let events = ManagerEvents(of: manager)
        try await manager.waitUntilPoweredOn()
        try await manager.publish(HeartRate.service)
        #expect(await manager.subscribedCentrals(of: HeartRate.measurement).isEmpty)
        #expect(await rig.fake.callsToApp["AcquireNotify"] == 1)
        // The central, still connected, writes its CCCD again: bluetoothd asks the new run to notify.
        #expect(await rig.fake.subscribe("2a37", by: central) == nil)
        #expect(await events.wait(forSubscribers: 1, of: HeartRate.measurement))
        #expect(await manager.subscribedCentrals(of: HeartRate.measurement).count == 1)
        #expect(await rig.fake.callsToApp["AcquireNotify"] == 2)
        #expect(await manager.updateValue([0x06, 80], for: HeartRate.measurement))
        var notifications = central.notifications.makeAsyncIterator()
        #expect(await notifications.next()?.value == [0x06, 80])
        await backend.shutdown()
        await rig.stop()
    }
}
