// Level 5, first half: the fake bluetoothd itself, proven against a minimal app written directly on DBus.
import BlueZTesting
import DBus
import GATTModel
import Testing

/// A private bus, a fake bluetoothd on it, and a minimal app registered with it.
struct FakeRig {
    let bus: PrivateBus
    let fake: FakeBluetoothd
    let appConnection: BusConnection
    let app: MinimalGATTApp

    init(_ characteristics: [MinimalCharacteristic], serviceUUID: String = "180d", register: Bool = true) async throws {
        bus = try PrivateBus()
        fake = try await FakeBluetoothd(busAddress: bus.address)
        appConnection = try bus.connect("app")
        app = try MinimalGATTApp(connection: appConnection, serviceUUID: serviceUUID, characteristics: characteristics)
        if register { try await registerApp() }
    }

    func registerApp() async throws {
        _ = try await appConnection.call(
            "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.GattManager1", member: "RegisterApplication",
            arguments: [.objectPath(app.root), .vardict([:])])
    }

    func stop() async {
        await fake.stop()
        appConnection.close()
        bus.stop()
    }
}

@Suite(.enabled(if: PrivateBus.isAvailable), .serialized)
struct FakeBluetoothdTests {
    @Test func registrationCallsGetManagedObjectsAndKeepsTheFlagsAsDeclared() async throws {
        let rig = try await FakeRig([
            MinimalCharacteristic(uuid: "2a37", flags: ["notify"]),
            MinimalCharacteristic(uuid: "2a39", flags: ["write", "encrypt-read", "reliable-write"]),
        ])
        #expect(await rig.fake.managedObjectsCalls == 1)
        #expect(await rig.fake.registrationCount == 1)
        let written = try #require(await rig.fake.characteristic("2a39"))
        #expect(written.flags == ["write", "encrypt-read", "reliable-write"])
        #expect(written.parsed.properties == [.write, .read, .extendedProperties])
        let roles = await rig.fake.registeredApplications.first?.attributes.map(\.role)
        #expect(roles == [.service, .characteristic, .cccd, .characteristic, .extendedProperties])
        await rig.stop()
    }

    @Test(arguments: [["read", "notifiy"], ["read", "indicate", "encrypt-authenticated-notify", "bogus"]])
    func anUnknownFlagFailsTheWholeRegistration(flags: [String]) async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a37", flags: flags)], register: false)
        await #expect(throws: DBusError.self) { try await rig.registerApp() }
        #expect(await rig.fake.registrationCount == 0)
        #expect(await rig.fake.registrationFailures.count == 1)
        await rig.stop()
    }

    @Test(arguments: ["1800", "1801", "00001800-0000-1000-8000-00805f9b34fb"])
    func gapAndGattServicesAreRefused(uuid: String) async throws {
        let rig = try await FakeRig(
            [MinimalCharacteristic(uuid: "2a00", flags: ["read"])], serviceUUID: uuid, register: false)
        let error = await #expect(throws: DBusError.self) { try await rig.registerApp() }
        #expect(error?.name == "org.bluez.Error.Failed")
        await rig.stop()
    }

    @Test(arguments: ["2902", "2900"])
    func appDeclaredCCCDOrExtendedPropertiesFailHereThough566AcceptsADuplicate(uuid: String) async throws {
        let rig = try await FakeRig(
            [MinimalCharacteristic(uuid: "2a37", flags: ["notify"], descriptors: [(uuid, ["read", "write"])])],
            register: false)
        await #expect(throws: DBusError.self) { try await rig.registerApp() }
        await rig.stop()
    }

    @Test func aSecondRegistrationOfTheSamePathIsAlreadyExists() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a37", flags: ["read"])])
        let error = await #expect(throws: DBusError.self) { try await rig.registerApp() }
        #expect(error?.name == "org.bluez.Error.AlreadyExists")
        await rig.stop()
    }

    @Test func readsSendOffsetOnlyWhenNonZeroAndLongReadsReassemble512Bytes() async throws {
        let value = (0..<512).map { UInt8($0 & 0xFF) }
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a38", flags: ["read"], value: value)])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01", mtu: 100)
        #expect(await rig.fake.read("2a38", by: central) == .success(Array(value.prefix(99))))
        #expect(await rig.fake.read("2a38", offset: 500, by: central) == .success(Array(value[500...])))
        #expect(await rig.fake.readLong("2a38", by: central) == .success(value))
        let reads = rig.app.calls("ReadValue")
        #expect(reads.first?.options["offset"] == nil)
        #expect(reads.first?.options["device"] == .objectPath(central.path))
        #expect(reads.first?.options["link"] == .string("LE"))
        #expect(reads.first?.options["mtu"] == .uint16(100))
        #expect(reads[1].options["offset"] == .uint16(500))
        #expect(await rig.fake.read("2a38", offset: 513, by: central) == .failure(.invalidOffset))
        await rig.stop()
    }

    @Test func encryptReadWithoutEncryptionIsRefusedWithoutCallingTheApp() async throws {
        let rig = try await FakeRig([
            MinimalCharacteristic(uuid: "2a3b", flags: ["encrypt-read"], value: [1]),
            MinimalCharacteristic(uuid: "2a3c", flags: ["encrypt-authenticated-read"], value: [1]),
            MinimalCharacteristic(uuid: "2a3d", flags: ["write"]),
        ])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.read("2a3b", by: central) == .failure(.insufficientEncryption))
        #expect(await rig.fake.read("2a3c", by: central) == .failure(.insufficientAuthentication))
        #expect(await rig.fake.read("2a3d", by: central) == .failure(.readNotPermitted))
        #expect(rig.app.calls("ReadValue").isEmpty)
        let encrypted = try await rig.fake.connect(address: "11:22:33:44:55:02", security: .encrypted)
        #expect(await rig.fake.read("2a3b", by: encrypted) == .success([1]))
        await rig.stop()
    }

    @Test func aTooLongWriteIsInvalidAttributeValueLength() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a39", flags: ["write"], maximumWriteLength: 4)])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.write("2a39", [1, 2, 3, 4, 5], by: central) == .invalidAttributeValueLength)
        #expect(await rig.fake.write("2a39", [1, 2], by: central) == nil)
        #expect(rig.app.value(0) == [1, 2])
        #expect(rig.app.calls("WriteValue").allSatisfy { $0.expectsReply && $0.options["type"] == nil })
        await rig.stop()
    }

    @Test func writeWithoutResponseIsSentNoReplyAndSucceedsEvenForAFailingWriteRequest() async throws {
        let rig = try await FakeRig([
            MinimalCharacteristic(uuid: "2a3a", flags: ["write-without-response", "write"], maximumWriteLength: 2)
        ])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.write("2a3a", [7], withResponse: false, by: central) == nil)
        #expect(await rig.fake.write("2a3a", [1, 2, 3], withResponse: true, by: central) == nil)
        #expect(await rig.app.until(received: "WriteValue", count: 2))
        #expect(rig.app.calls("WriteValue").allSatisfy { !$0.expectsReply })
        #expect(rig.app.value(0) == [7])
        #expect(await rig.fake.repliesFromApp == 1)  // GetManagedObjects only
        await rig.stop()
    }

    @Test func aReliableWriteStopsAtTheFirstErrorAndKeepsEarlierHandlesWritten() async throws {
        let rig = try await FakeRig([
            MinimalCharacteristic(
                uuid: "2a39", flags: ["write", "reliable-write", "authorize"], maximumWriteLength: 512),
            MinimalCharacteristic(uuid: "2a3a", flags: ["write", "reliable-write"], maximumWriteLength: 2),
        ])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let error = await rig.fake.prepareAndExecute(
            [
                PreparedWrite(attribute: "2a39", offset: 0, value: [1, 2]),
                PreparedWrite(attribute: "2a39", offset: 2, value: [3]),
                PreparedWrite(attribute: "2a3a", offset: 0, value: [9, 9, 9]),
            ], by: central)
        #expect(error == .invalidAttributeValueLength)
        #expect(rig.app.value(0) == [1, 2, 3])
        let writes = rig.app.calls("WriteValue")
        // 5.66's prepare-authorize carries no bytes: `prep_write_cb` hands gatt-db a NULL value.
        #expect(writes.first?.options["prepare-authorize"] == .boolean(true))
        #expect(writes.first?.value == [])
        #expect(writes.count == 3)  // authorize, merged 2a39, failing 2a3a
        await rig.stop()
    }

    @Test func twoQueuedHandlesWithoutReliableWriteAreRefusedWholeWithRequestNotSupported() async throws {
        let rig = try await FakeRig([
            MinimalCharacteristic(uuid: "2a39", flags: ["write", "reliable-write"], maximumWriteLength: 512),
            MinimalCharacteristic(uuid: "2a3a", flags: ["write"], maximumWriteLength: 512),
        ])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let error = await rig.fake.prepareAndExecute(
            [
                PreparedWrite(attribute: "2a39", offset: 0, value: [1]),
                PreparedWrite(attribute: "2a3a", offset: 0, value: [2]),
            ], by: central)
        #expect(error == .requestNotSupported)
        #expect(rig.app.calls("WriteValue").isEmpty)
        await rig.stop()
    }

    @Test func aLongWriteIsOneWriteValueAndItsLengthCheckCountsTheHeader() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a39", flags: ["write"], maximumWriteLength: 512)])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        // 18-byte parts as at ATT_MTU 23: 29 of them for 508 bytes, merged into one queue entry.
        func parts(_ count: Int) -> [PreparedWrite] {
            stride(from: 0, to: count, by: 18).map {
                PreparedWrite(
                    attribute: "2a39", offset: UInt16($0), value: (($0)..<min($0 + 18, count)).map { UInt8($0 & 0xFF) })
            }
        }
        #expect(await rig.fake.prepareAndExecute(parts(508), by: central) == nil)
        #expect(rig.app.calls("WriteValue").count == 1)
        #expect(rig.app.value(0) == (0..<508).map { UInt8($0 & 0xFF) })
        // The last part of 512 bytes (offset 504, 8 bytes) is 12 + 504 > 512 for 5.66's check_length.
        #expect(await rig.fake.prepareAndExecute(parts(512), by: central) == .invalidAttributeValueLength)
        #expect(
            await rig.fake.write("2a39", Array(repeating: 7, count: 511), by: central) == .invalidAttributeValueLength)
        #expect(rig.app.calls("WriteValue").count == 1)
        await rig.stop()
    }

    @Test func acquireNotifyIsCalledOnceAndEveryDatagramReachesEveryCentralInOrder() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a37", flags: ["notify"], offersAcquireNotify: true)])
        let first = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let second = try await rig.fake.connect(address: "11:22:33:44:55:02")
        #expect(await rig.fake.subscribe("2a37", by: first) == nil)
        #expect(await rig.fake.subscribe("2a37", by: second) == nil)
        #expect(rig.app.calls("AcquireNotify").count == 1)
        #expect(rig.app.calls("AcquireNotify").first?.options["device"] == .objectPath(first.path))
        #expect(await rig.fake.notifyCount("2a37") == (2, true))
        for n in 0..<20 { #expect(rig.app.sendOnSocket(0, [UInt8(n)])) }
        let expected = (0..<20).map {
            FakeNotification(characteristic: rig.app.path(0), value: [UInt8($0)], isIndication: false)
        }
        #expect(await collect(20, of: first.notifications) == expected)
        #expect(await collect(20, of: second.notifications) == expected)
        #expect(await rig.fake.unsubscribe("2a37", by: first) == nil)
        #expect(await rig.fake.notifyCount("2a37") == (1, true))
        await rig.fake.disconnect(second)
        #expect(await rig.fake.notifyCount("2a37") == (0, false))
        // The fake shuts its end down as the count reaches 0 (NotifyReader.stop): the app's next send fails at once.
        #expect(!rig.app.sendOnSocket(0, [1]))
        #expect(rig.app.calls("StopNotify").isEmpty)
        await rig.stop()
    }

    @Test func aFloodOf300NotificationsArrivesWithoutLoss() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a37", flags: ["notify"], offersAcquireNotify: true)])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01", mtu: 247)
        #expect(await rig.fake.subscribe("2a37", by: central) == nil)
        let sender = Task.detached {
            (0..<300).allSatisfy { n in rig.app.sendOnSocket(0, [UInt8(n & 0xFF), UInt8(n >> 8)]) }
        }
        let received = await collect(300, of: central.notifications)
        #expect(await sender.value)
        #expect(received.map { Int($0.value[0]) | Int($0.value[1]) << 8 } == Array(0..<300))
        await rig.stop()
    }

    @Test func startNotifyPathDeliversPropertiesChangedAndConfirmsIndications() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a3c", flags: ["indicate"])])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        #expect(await rig.fake.subscribe("2a3c", indications: false, by: central) == .cccdImproperlyConfigured)
        #expect(await rig.fake.subscribe("2a3c", indications: true, by: central) == nil)
        #expect(await rig.app.until(received: "StartNotify", count: 1))
        #expect(rig.app.calls("StartNotify").allSatisfy { !$0.expectsReply })
        try rig.app.emitValue(0, [42])
        let indication = await first(of: central.notifications)
        #expect(indication == FakeNotification(characteristic: rig.app.path(0), value: [42], isIndication: true))
        #expect(await rig.app.until(received: "Confirm", count: 1))
        #expect(await rig.fake.unsubscribe("2a3c", by: central) == nil)
        #expect(await rig.app.until(received: "StopNotify", count: 1))
        await rig.stop()
    }

    @Test func aWithheldConfirmationHoldsTheNextIndication() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a3c", flags: ["indicate"])])
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01", confirmsIndications: false)
        #expect(await rig.fake.subscribe("2a3c", indications: true, by: central) == nil)
        try rig.app.emitValue(0, [1])
        try rig.app.emitValue(0, [2])
        var iterator = central.notifications.makeAsyncIterator()
        #expect(await iterator.next()?.value == [1])
        // The central has not confirmed, so the fake has not called the app's Confirm.
        #expect(await rig.fake.callsToApp["Confirm"] == nil)
        await rig.fake.confirmIndication(from: central)
        #expect(await iterator.next()?.value == [2])
        #expect(await rig.app.until(received: "Confirm", count: 1))
        await rig.stop()
    }

    @Test func restartChangesTheUniqueNameAndForgetsEveryRegistration() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a37", flags: ["read"])])
        let before = await rig.fake.uniqueName
        try await rig.fake.restart()
        #expect(await rig.fake.uniqueName != before)
        #expect(await rig.fake.registeredApplications.isEmpty)
        #expect(try await rig.appConnection.nameOwner("org.bluez") == rig.fake.uniqueName)
        try await rig.registerApp()
        #expect(await rig.fake.registrationCount == 2)
        await rig.stop()
    }

    @Test func advertisementPropertiesAreReadWithGetAllAndCountedAsInstances() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address, maximumAdvertisements: 1)
        let app = try bus.connect("app")
        try app.export(
            "/adv",
            [
                Interface(
                    "org.bluez.LEAdvertisement1", methods: [Method("Release", immediate: { $0.reply() })],
                    properties: [
                        Property("Type", signature: "s", get: { .string("peripheral") }),
                        Property("LocalName", signature: "s", get: { .string("Thermo") }),
                    ])
            ])
        func register() async throws {
            _ = try await app.call(
                "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.LEAdvertisingManager1",
                member: "RegisterAdvertisement", arguments: [.objectPath("/adv"), .vardict([:])])
        }
        try await register()
        let properties = await fake.advertisementProperties.values.first
        #expect(properties?["LocalName"] == .string("Thermo"))
        #expect(await fake.callsToApp["GetAll"] == 1)
        let active = try await app.call(
            "org.bluez", path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string("org.bluez.LEAdvertisingManager1"), .string("SupportedInstances")])
        #expect(active == [.variant(.byte(0))])
        let error = await #expect(throws: DBusError.self) { try await register() }
        #expect(error?.name == "org.bluez.Error.AlreadyExists")
        await fake.releaseAdvertisements()
        #expect(await fake.callsToApp["Release"] == 1)
        await fake.stop()
        app.close()
        bus.stop()
    }

    @Test func agentRegistrationRecordsThePathAndCapability() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address)
        let app = try bus.connect("app")
        for (member, arguments) in [
            ("RegisterAgent", [DBusValue.objectPath("/agent"), .string("NoInputNoOutput")]),
            ("RequestDefaultAgent", [.objectPath("/agent")]),
        ] {
            _ = try await app.call(
                "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1", member: member,
                arguments: arguments)
        }
        #expect(await fake.registeredAgent?.capability == "NoInputNoOutput")
        #expect(await fake.defaultAgentPath == "/agent")
        await fake.stop()
        app.close()
        bus.stop()
    }

    /// Five centrals, 100 reads each, all at once: at most one ReadValue per central is pending (ATT), which
    /// also keeps us under dbus-daemon's default of 128 pending replies per connection.
    @Test func fiveHundredConcurrentReadsGetFiveHundredAnswers() async throws {
        let rig = try await FakeRig([MinimalCharacteristic(uuid: "2a38", flags: ["read"], value: [1, 2, 3])])
        var centrals: [FakeCentral] = []
        for n in 1...5 { centrals.append(try await rig.fake.connect(address: "11:22:33:44:55:0\(n)")) }
        let successes = await withTaskGroup(of: Bool.self) { group in
            for n in 0..<500 {
                let central = centrals[n % 5]
                group.addTask { await rig.fake.read("2a38", by: central) == .success([1, 2, 3]) }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(successes == 500)
        #expect(await rig.fake.callsToApp["ReadValue"] == 500)
        #expect(await rig.fake.repliesFromApp == 501)
        await rig.stop()
    }
}
