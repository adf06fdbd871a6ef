import BlueZTesting
import DBus
import GATTModel
import Logging
import Peripheral
import Testing

@_spi(Backend) @testable import BlueZ

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

    /// Each registration change awaits bluetoothd several times; asked for at once they must still reach it one at
    /// a time, or the second `RegisterApplication` meets the first's path and bluetoothd answers AlreadyExists.
    @Test func changesAskedForAtOnceReachBluetoothdOneAtATimeAndNoneOutlivesShutdown() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let extras = (1...3).map { n in
            Service(
                id: "extra\(n)", uuid: BluetoothUUID(UInt16(0x1810 + n)),
                characteristics: [
                    Characteristic(id: "value\(n)", uuid: BluetoothUUID(UInt16(0x2A50 + n)), properties: [.read])
                ])
        }
        async let first: Void = rig.backend.publish(extras[0])
        async let second: Void = rig.backend.publish(extras[1])
        async let advertising: Void = rig.backend.startAdvertising(Self.advertisement)
        async let third: Void = rig.backend.publish(extras[2])
        _ = try await (first, second, advertising, third)
        #expect(await rig.fake.registrationCount == 4)
        #expect(await rig.fake.registeredApplications.map(\.services.count) == [4])
        #expect(await rig.fake.advertisementsOnAir == 1)

        // A change asked for beside the shutdown is either performed before it or refused as shut down; none waits
        // forever, and none reaches bluetoothd after the unregistering.
        async let stopped: Void = rig.backend.shutdown()
        async let late: Result<Void, any Error> = {
            do { try await rig.backend.unpublish(extras[0]) } catch { return .failure(error) }
            return .success(())
        }()
        await stopped
        switch await late {
        case .success: #expect(await rig.fake.registrationCount == 5)
        case .failure(let error):
            #expect((error as? BlueZError).map { "\($0)" } == "\(BlueZError.shutDown)")
            #expect(await rig.fake.registrationCount == 4)
        }
        #expect(await rig.fake.registeredApplications.isEmpty)
        await #expect(throws: BlueZError.self) { try await rig.backend.publish(extras[0]) }
        await rig.stop()
    }
}
