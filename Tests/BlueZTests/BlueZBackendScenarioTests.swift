import BlueZTesting
import DBus
import GATTModel
import Logging
import Peripheral
import Synchronization
import Testing

// Level 5 scenarios: the real BlueZBackend, PeripheralManager and ProfileServer against the fake bluetoothd on a
// private bus. The same scenario list runs at level 6 (lab, real bluetoothd 5.66): where they disagree, the fake
// is wrong. Every scenario asserts exact ATT codes, D-Bus error names, and requests = answers.
@testable import BlueZ

/// A fake bluetoothd, a BlueZBackend and a PeripheralManager serving published services from a ValueStore.
struct BackendRig {
    let bus: PrivateBus
    let fake: FakeBluetoothd
    let backend: BlueZBackend
    let manager: PeripheralManager
    let store: ValueStore

    /// A rig serving `service`; `handler` replaces the `ProfileServer` over `store`, and request deadlines run on
    /// `clock`.
    init(
        _ service: Service, values: [String: [UInt8]] = [:], useAcquireNotify: Bool = true,
        useAcquireWrite: Bool = false, queueCapacity: Int = 16, hasExtendedAdvertising: Bool = false,
        handler: (any RequestHandler)? = nil, clock: some Clock<Duration> = ContinuousClock()
    ) async throws {
        bus = try PrivateBus()
        fake = try await FakeBluetoothd(busAddress: bus.address, hasExtendedAdvertising: hasExtendedAdvertising)
        var logger = Logger(label: "backend")
        logger.logLevel = .critical
        backend = try await BlueZBackend(
            bus: .address(bus.address), adapter: "hci0",
            options: BlueZOptions(
                deviceName: "Test", useAcquireNotify: useAcquireNotify, useAcquireWrite: useAcquireWrite),
            logger: logger)
        store = ValueStore(values)
        manager = PeripheralManager(
            backend: backend, handler: handler ?? ProfileServer(store: store, logger: logger),
            configuration: PeripheralManager.Configuration(queueCapacity: queueCapacity), clock: clock,
            logger: logger)
        events = ManagerEvents(of: manager)
        try await manager.waitUntilPoweredOn()
        try await manager.publish(service)
    }

    /// The manager's events, consumed from the start: what the waits below await.
    let events: ManagerEvents

    /// Waits for the manager's events to report `count` subscribers of `characteristic`, and says whether the
    /// manager then lists as many.
    func waitForSubscribers(_ count: Int, of characteristic: Characteristic) async -> Bool {
        guard await events.wait(forSubscribers: count, of: characteristic) else { return false }
        return await manager.subscribedCentrals(of: characteristic).count == count
    }

    /// Waits until the manager received `requests` requests and counted an answer to each: the count that
    /// satisfies the condition wakes the wait.
    func waitForAnswers(_ requests: Int) async -> Bool {
        await manager.requestCounts(within: .seconds(5)) { $0.requests == requests && $0.answered == requests }
    }

    func stop() async {
        await backend.shutdown()
        await fake.stop()
        bus.stop()
    }
}

enum HeartRate {
    static let measurement = Characteristic(id: "measurement", uuid: BluetoothUUID(0x2A37), properties: [.notify])
    static let location = Characteristic(
        id: "location", uuid: BluetoothUUID(0x2A38), properties: [.read],
        descriptors: [.userDescription("Sensor location")])
    static let control = Characteristic(
        id: "control", uuid: BluetoothUUID(0x2A39), properties: [.write], maximumLength: 4)
    static let command = Characteristic(
        id: "command", uuid: BluetoothUUID(0x2A3A), properties: [.writeWithoutResponse])
    static let secret = Characteristic(
        id: "secret", uuid: BluetoothUUID(0x2A3B), properties: [.read],
        security: SecurityRequirements([.read: .encrypted]))
    static let alert = Characteristic(id: "alert", uuid: BluetoothUUID(0x2A3C), properties: [.indicate])
    static let service = Service(
        id: "hr", uuid: BluetoothUUID(0x180D),
        characteristics: [measurement, location, control, command, secret, alert])
}

@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .serialized, .timeLimit(.minutes(1)))
struct BlueZBackendScenarioTests {
    @Test func registrationPublishesTheTreeWithExactFlagsAfterGetManagedObjects() async throws {
        let rig = try await BackendRig(HeartRate.service)
        #expect(await rig.fake.managedObjectsCalls == 1)
        #expect(await rig.fake.registrationCount == 1)
        #expect(await rig.fake.registrationFailures.isEmpty)
        #expect(await rig.fake.characteristic("2a37")?.flags == ["notify"])
        #expect(await rig.fake.characteristic("2a38")?.flags == ["read"])
        #expect(await rig.fake.characteristic("2a38")?.descriptors.map(\.flags) == [["read"]])
        #expect(await rig.fake.characteristic("2a39")?.flags == ["write"])
        #expect(await rig.fake.characteristic("2a3a")?.flags == ["write-without-response"])
        #expect(await rig.fake.characteristic("2a3b")?.flags == ["read", "encrypt-read"])
        #expect(await rig.fake.characteristic("2a3c")?.flags == ["indicate"])
        #expect(await rig.fake.characteristic("2a37")?.offersAcquireNotify == true)
        #expect(await rig.fake.characteristic("2a38")?.offersAcquireNotify == false)
        let roles = await rig.fake.registeredApplications.first?.attributes.map(\.role)
        #expect(
            roles == [
                .service, .characteristic, .cccd, .characteristic, .descriptor, .characteristic, .characteristic,
                .characteristic, .characteristic, .cccd,
            ])
        await rig.stop()
    }

    @Test func readsWithAndWithoutOffsetsAndA512ByteValue() async throws {
        let value = (0..<512).map { UInt8($0 & 0xFF) }
        let rig = try await BackendRig(HeartRate.service, values: ["location": value])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01", mtu: 100)
        #expect(await rig.fake.read("2a38", by: central) == .success(Array(value[..<99])))
        #expect(await rig.fake.read("2a38", offset: 500, by: central) == .success(Array(value[500...])))
        #expect(await rig.fake.read("2a38", offset: 512, by: central) == .success([]))
        #expect(await rig.fake.readLong("2a38", by: central) == .success(value))
        #expect(await rig.fake.read("2a38", offset: 513, by: central) == .failure(.invalidOffset))
        #expect(await rig.fake.errorsFromApp["org.bluez.Error.InvalidOffset"] == 1)
        // Read, then Read Blob at 99, 198, 297, 396, 495: six calls for 512 bytes at MTU 100.
        #expect(await rig.waitForAnswers(3 + 6 + 1))
        #expect(rig.manager.requestCounts.rejected == 1)
        await rig.stop()
    }

    @Test func descriptorsAreReadWithOffsetsAndWithoutTheManager() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.read("2901", by: central) == .success(Array("Sensor location".utf8)))
        #expect(await rig.fake.read("2901", offset: 7, by: central) == .success(Array("location".utf8)))
        #expect(await rig.fake.read("2901", offset: 16, by: central) == .failure(.invalidOffset))
        #expect(await rig.fake.write("2901", [1], by: central) == .writeNotPermitted)
        #expect(await rig.fake.callsToApp["WriteValue"] == nil)
        #expect(rig.manager.requestCounts.requests == 0)
        await rig.stop()
    }

    @Test func aTooLongWriteIsInvalidAttributeValueLength() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.write("2a39", [1, 2, 3, 4, 5], by: central) == .invalidAttributeValueLength)
        #expect(await rig.fake.errorsFromApp == ["org.bluez.Error.InvalidValueLength": 1])
        #expect(await rig.fake.write("2a39", [1, 2, 3, 4], by: central) == nil)
        #expect(rig.store.snapshot["control"] == [1, 2, 3, 4])
        #expect(await rig.waitForAnswers(2))
        await rig.stop()
    }

    @Test func aWriteWithoutResponseIsStoredAndGetsNoReply() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let before = rig.backend.connection.statistics
        let repliesFromApp = await rig.fake.repliesFromApp
        #expect(await rig.fake.write("2a3a", [7, 8], withResponse: false, by: central) == nil)
        #expect(await rig.waitForAnswers(1))
        #expect(rig.store.snapshot["command"] == [7, 8])
        #expect(rig.manager.requestCounts.withoutReply == 1)
        #expect(await rig.fake.callsToApp["WriteValue"] == 1)
        #expect(await rig.fake.repliesFromApp == repliesFromApp)
        let after = rig.backend.connection.statistics
        #expect(after.repliesSent == before.repliesSent)
        await rig.stop()
    }

    @Test func encryptReadWithoutEncryptionNeverReachesTheApp() async throws {
        let rig = try await BackendRig(HeartRate.service, values: ["secret": [0x42]])
        let plain = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.read("2a3b", by: plain) == .failure(.insufficientEncryption))
        #expect(await rig.fake.callsToApp["ReadValue"] == nil)
        #expect(rig.manager.requestCounts.requests == 0)
        let encrypted = try await rig.fake.connect(address: "11:22:33:44:55:02", security: .encrypted)
        #expect(await rig.fake.read("2a3b", by: encrypted) == .success([0x42]))
        #expect(await rig.waitForAnswers(1))
        #expect(rig.manager.requestCounts.responded == 1)
        await rig.stop()
    }

    @Test func notificationsReachTwoCentralsInOrderThroughOneAcquiredSocket() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let first = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let second = try await rig.fake.connect(address: "11:22:33:44:55:02")
        #expect(await rig.fake.subscribe("2a37", by: first) == nil)
        #expect(await rig.fake.subscribe("2a37", by: second) == nil)
        #expect(await rig.fake.callsToApp["AcquireNotify"] == 1)
        #expect(await rig.fake.notifyCount("2a37") == (2, true))
        #expect(await rig.waitForSubscribers(1, of: HeartRate.measurement))
        for n in 0..<10 { #expect(await rig.manager.updateValue([UInt8(n)], for: HeartRate.measurement)) }
        let expected = (0..<10).map { [UInt8($0)] }
        #expect(await collect(10, of: first.notifications).map(\.value) == expected)
        #expect(await collect(10, of: second.notifications).map(\.value) == expected)
        #expect(await rig.manager.notificationCounts.dropped == 0)
        await rig.stop()
    }

    @Test func startNotifyIsCalledPerSubscriberAndStopNotifyOnceWhenTheLastLeaves() async throws {
        let rig = try await BackendRig(HeartRate.service, useAcquireNotify: false)
        let first = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let second = try await rig.fake.connect(address: "11:22:33:44:55:02")
        #expect(await rig.fake.subscribe("2a37", by: first) == nil)
        #expect(await rig.fake.subscribe("2a37", by: second) == nil)
        #expect(await rig.fake.callsToApp["StartNotify"] == 2)
        #expect(await rig.fake.callsToApp["AcquireNotify"] == nil)
        #expect(await rig.waitForSubscribers(1, of: HeartRate.measurement))
        for n in 0..<5 { #expect(await rig.manager.updateValue([UInt8(n)], for: HeartRate.measurement)) }
        let expected = (0..<5).map { [UInt8($0)] }
        #expect(await collect(5, of: first.notifications).map(\.value) == expected)
        #expect(await collect(5, of: second.notifications).map(\.value) == expected)
        #expect(await rig.fake.unsubscribe("2a37", by: first) == nil)
        #expect(await rig.fake.callsToApp["StopNotify"] == nil)
        #expect(await rig.fake.unsubscribe("2a37", by: second) == nil)
        #expect(await rig.fake.callsToApp["StopNotify"] == 1)
        #expect(await rig.waitForSubscribers(0, of: HeartRate.measurement))
        await rig.stop()
    }

    @Test func indicationsAreConfirmedThroughConfirm() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.subscribe("2a3c", indications: true, by: central) == nil)
        #expect(await rig.waitForSubscribers(1, of: HeartRate.alert))
        for n in 0..<5 { #expect(await rig.manager.updateValue([UInt8(n)], for: HeartRate.alert)) }
        let received = await collect(5, of: central.notifications)
        #expect(received.map(\.value) == (0..<5).map { [UInt8($0)] })
        #expect(received.allSatisfy { $0.isIndication })
        #expect(await rig.manager.notificationCounts(within: .seconds(10)) { $0.confirmed == 5 })
        #expect(await rig.fake.callsToApp["Confirm"] == 5)
        await rig.stop()
    }

    @Test func indicationsToTwoCentralsAreConfirmedByEachAndArriveInOrder() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let first = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let second = try await rig.fake.connect(address: "11:22:33:44:55:02")
        #expect(await rig.fake.subscribe("2a3c", indications: true, by: first) == nil)
        #expect(await rig.fake.subscribe("2a3c", indications: true, by: second) == nil)
        #expect(await rig.waitForSubscribers(1, of: HeartRate.alert))
        for n in 0..<5 { #expect(await rig.manager.updateValue([UInt8(n)], for: HeartRate.alert)) }
        let expected = (0..<5).map { [UInt8($0)] }
        #expect(await collect(5, of: first.notifications).map(\.value) == expected)
        #expect(await collect(5, of: second.notifications).map(\.value) == expected)
        // 5.66 `conf_cb` calls Confirm() once per device that confirmed: 2 per indication here.
        #expect(await rig.fake.until { $0.callsToApp["Confirm"] == 10 })
        #expect(await rig.manager.notificationCounts(within: .seconds(10)) { $0.confirmed == 5 })
        #expect(await rig.manager.notificationCounts.dropped == 0)
        await rig.stop()
    }

    @Test func aFloodOf300NotificationsLosesNothingThroughFullReadyAndRetry() async throws {
        let rig = try await BackendRig(HeartRate.service, queueCapacity: 4)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01", mtu: 517)
        #expect(await rig.fake.subscribe("2a37", by: central) == nil)
        #expect(await rig.waitForSubscribers(1, of: HeartRate.measurement))
        // bluetoothd's main loop stalls: the socket fills, so the manager's queue fills behind it.
        await rig.fake.holdNotifySockets()
        let values = (0..<300).map { n in [UInt8(n >> 8), UInt8(n & 0xFF)] + Array(repeating: UInt8(0xA5), count: 510) }
        var readySignals = 0
        for value in values {
            while !(await rig.manager.updateValue(value, for: HeartRate.measurement)) {
                await rig.fake.releaseNotifySockets()
                readySignals += 1
                #expect(await rig.events.wait(forCount: readySignals) { $0 == .readyToUpdateSubscribers })
            }
        }
        await rig.fake.releaseNotifySockets()
        let received = await collect(300, of: central.notifications, within: .seconds(20))
        #expect(received.count == 300)
        #expect(received.map(\.value) == values, "\(received.count) of 300 received in order")
        let statistics = await rig.manager.notificationCounts
        #expect(statistics.refusedFull > 0)
        #expect(statistics.readySignals > 0)
        #expect(statistics.sent == 300 && statistics.dropped == 0)
        await rig.stop()
    }

    @Test func restartOfBluetoothdLeadsTheBackendToRegisterAgain() async throws {
        let rig = try await BackendRig(HeartRate.service)
        try await rig.manager.startAdvertising(Advertisement(localName: "HR", serviceUUIDs: [BluetoothUUID(0x180D)]))
        #expect(await rig.fake.advertisementProperties.count == 1)
        try await rig.fake.restart()
        #expect(await rig.fake.until { $0.registrationCount == 2 })
        #expect(await rig.fake.managedObjectsCalls == 2)
        #expect(await rig.fake.until { $0.advertisementProperties.count == 1 })
        #expect(await rig.fake.until { $0.registeredAgent != nil })
        #expect(await rig.events.wait(for: .poweredOn))
        // The old bluetoothd released the advertisement on its way out; the backend registered it with the new
        // one, so the manager reports it on the air again.
        #expect(await rig.fake.callsToApp["Release"] == 1)
        #expect(await rig.fake.until { $0.advertisementsOnAir == 1 })
        #expect(await rig.manager.isAdvertising)
        // Requests from the new bluetoothd are admitted.
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.read("2a38", by: central) == .success([]))
        await rig.stop()
    }

    @Test func callsFromAnotherSenderAreAccessDenied() async throws {
        let rig = try await BackendRig(HeartRate.service)
        let stranger = try rig.bus.connect("stranger")
        let path = try #require(await rig.fake.characteristic("2a38")?.path)
        let owner = try #require(await rig.fake.registeredApplications.first?.owner)
        for (member, arguments) in [
            ("ReadValue", [DBusValue.vardict([:])]), ("WriteValue", [.bytes([1]), .vardict([:])]),
        ] {
            let error = await #expect(throws: DBusError.self) {
                _ = try await stranger.call(
                    owner, path: path, interface: "org.bluez.GattCharacteristic1", member: member, arguments: arguments)
            }
            #expect(error?.name == "org.freedesktop.DBus.Error.AccessDenied")
        }
        #expect(rig.manager.requestCounts.requests == 0)
        stranger.close()
        await rig.stop()
    }

    @Test func fiveHundredConcurrentReadsAreEachAnsweredOnce() async throws {
        let rig = try await BackendRig(HeartRate.service, values: ["location": [1, 2, 3]])
        var centrals: [FakeCentral] = []
        for n in 0..<10 { centrals.append(try await rig.fake.connect(address: "11:22:33:44:55:\(10 + n)")) }
        let fake = rig.fake
        let successes = await withTaskGroup(of: Bool.self) { group in
            for n in 0..<500 {
                let central = centrals[n % centrals.count]
                group.addTask { await fake.read("2a38", by: central) == .success([1, 2, 3]) }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(successes == 500)
        #expect(await rig.fake.callsToApp["ReadValue"] == 500)
        #expect(await rig.waitForAnswers(500))
        #expect(rig.manager.requestCounts.responded == 500)
        await rig.stop()
    }
}
