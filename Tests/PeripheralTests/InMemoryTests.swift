import GATTModel
import Peripheral
import PeripheralTesting
import Testing

/// Level 4: virtual centrals against a real `PeripheralManager` and the default handler, in memory.
@Suite struct InMemoryTests {
    @Test func aCentralReadsACachedValue() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        #expect(try await phone.read("name") == Array("blemu".utf8))
    }

    @Test func readingAWriteOnlyCharacteristicIsReadNotPermitted() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.readNotPermitted) { try await phone.read("command") }
    }

    @Test func aWrittenValueIsStoredAndReadBack() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        try await phone.write([7, 7, 7], to: "setting")
        #expect(try await phone.read("setting") == [7, 7, 7])
    }

    @Test func writingACachedValueIsWriteNotPermitted() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.writeNotPermitted) { try await phone.write([1], to: "name") }
    }

    @Test func aWriteLongerThanTheMaximumIsInvalidAttributeValueLength() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.invalidAttributeValueLength) {
            try await phone.write(Array(repeating: 1, count: 9), to: "setting")
        }
        #expect(try await phone.read("setting") == [0])
    }

    @Test func aWritePastTheEndOfTheValueIsInvalidOffset() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.invalidOffset) { try await phone.write([1], to: "setting", offset: 3) }
    }

    @Test func anEncryptedCharacteristicIsRefusedWithoutEncryptionAndServedWithIt() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.insufficientEncryption) { try await phone.read("secret") }
        await #expect(throws: ATTError.insufficientEncryption) { try await phone.write([1], to: "secret") }
        phone.pair(.encrypted)
        #expect(try await phone.read("secret") == [42])
    }

    @Test func anAuthenticatedCharacteristicNeedsMoreThanEncryption() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend, security: .encrypted)
        await #expect(throws: ATTError.insufficientAuthentication) { try await phone.read("pin") }
        phone.pair(.authenticated)
        #expect(try await phone.read("pin") == [1, 2, 3, 4])
    }

    @Test func aLongReadTakesSeveralReadsAndReturnsTheWholeValue() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        #expect(try await phone.read("log").count == 22)
        #expect(try await phone.readLong("log") == (0..<100).map { UInt8($0) })
        #expect(manager.requestCounts.requests == 1 + 5)  // 100 bytes in 22-byte responses: 5 reads
        await #expect(throws: ATTError.invalidOffset) { try await phone.read("log", offset: 101) }
    }

    @Test func aLongWriteIsOneBatchAppliedWhole() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        let value = (0..<150).map { UInt8(255 - $0) }
        try await phone.write(value, to: "log")
        #expect(try await phone.readLong("log") == value)
        #expect(manager.requestCounts.requests == 1 + 7)
    }

    @Test func aReliableWriteWithOneBadValueChangesNothing() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.invalidAttributeValueLength) {
            try await phone.writeReliably([("setting", [5]), ("log", Array(repeating: 0, count: 201))])
        }
        #expect(try await phone.read("setting") == [0])
        try await phone.writeReliably([("setting", [5]), ("log", [1])])
        #expect(try await phone.read("setting") == [5])
        #expect(try await phone.read("log") == [1])
    }

    @Test func aWriteWithoutResponseIsAnsweredButNothingIsSent() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        try await phone.write([3], to: "setting", withResponse: false)
        #expect(try await phone.read("setting") == [3])
        #expect(manager.requestCounts.withoutReply == 1)
        #expect(manager.requestCounts.outstanding == 0)
    }

    @Test func anUnknownCharacteristicIsAnsweredByTheEngine() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.invalidHandle) { try await phone.read("nope") }
        #expect(manager.requestCounts.answeredByEngine == 1)
    }

    @Test func subscribingNamesTheCentral() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend, id: "/org/bluez/hci0/dev_AA")
        try phone.subscribe(to: "hr")
        let event = await manager.nextEvent { $0.isSubscription(to: "hr") }
        #expect(event == .subscribed(Central(id: "/org/bluez/hci0/dev_AA"), Fixture.heartRate))
        #expect(await manager.subscribedCentrals(of: Fixture.heartRate).map(\.id) == ["/org/bluez/hci0/dev_AA"])
    }

    @Test func subscribingToAnEncryptedNotificationNeedsEncryption() async throws {
        let (_, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        #expect(throws: ATTError.insufficientEncryption) { try phone.subscribe(to: "private-hr") }
        #expect(throws: ATTError.requestNotSupported) { try phone.subscribe(to: "name") }
        phone.pair(.encrypted)
        try phone.subscribe(to: "private-hr")
    }

    @Test func aNotificationIsCutToTheCentralsLimit() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        try phone.subscribe(to: "hr")
        _ = await manager.nextEvent { $0.isSubscription(to: "hr") }
        #expect(await manager.updateValue(Array(repeating: 9, count: 30), for: Fixture.heartRate))
        var updates = phone.notifications.makeAsyncIterator()
        #expect(await updates.next()?.bytes == Array(repeating: 9, count: 20))
        #expect(await manager.notificationCounts.truncated == 1)
    }

    @Test func aFloodLargerThanTheQueueArrivesWithZeroLoss() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(
            publishing: [Fixture.service], configuration: .init(queueCapacity: 8), linkCapacity: 2)
        let phone = VirtualCentral(connectingTo: backend)
        try phone.subscribe(to: "hr")
        _ = await manager.nextEvent { $0.isSubscription(to: "hr") }
        let received = Task {
            var values: [[UInt8]] = []
            for await update in phone.notifications {
                values.append(update.bytes)
                if values.count == 500 { break }
            }
            return values
        }
        for index in 0..<500 {
            let value = [UInt8(index & 0xFF), UInt8(index >> 8)]
            while await !manager.updateValue(value, for: Fixture.heartRate) {
                _ = await manager.nextEvent { $0 == .readyToUpdateSubscribers }
            }
        }
        #expect(await received.value == (0..<500).map { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let statistics = await manager.notificationCounts
        #expect(statistics.refusedFull > 0)
        #expect(statistics.readySignals == statistics.refusedFull)
        #expect(statistics.sent == 500 && statistics.dropped == 0)
    }

    @Test func indicationsWaitForEachConfirmation() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend, autoConfirms: false)
        try phone.subscribe(to: "alert", indications: true)
        _ = await manager.nextEvent { $0.isSubscription(to: "alert") }
        #expect(await manager.updateValue([1], for: Fixture.alert))
        #expect(await manager.updateValue([2], for: Fixture.alert))
        var updates = phone.notifications.makeAsyncIterator()
        #expect(await updates.next() == .init(characteristicID: "alert", bytes: [1], isIndication: true))
        #expect(await manager.notificationCounts.sent == 1)  // [2] waits for the confirmation
        phone.confirm()
        #expect(await updates.next()?.bytes == [2])
    }

    @Test func disconnectingWithQueuedUpdatesCountsThemAsDropped() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend, autoConfirms: false)
        try phone.subscribe(to: "alert", indications: true)
        _ = await manager.nextEvent { $0.isSubscription(to: "alert") }
        for value in 1...3 { #expect(await manager.updateValue([UInt8(value)], for: Fixture.alert)) }
        phone.disconnect()
        let event = await manager.nextEvent { if case .updatesDropped = $0 { true } else { false } }
        #expect(event == .updatesDropped(phone.central, count: 3, reason: .disconnected))
        #expect(await manager.nextEvent { if case .centralDisconnected = $0 { true } else { false } } != nil)
        #expect(await manager.subscribedCentrals(of: Fixture.alert).isEmpty)
    }

    @Test func publishingTheSameServiceTwiceFails() async throws {
        let (manager, _) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        await #expect(throws: PeripheralError.alreadyPublished(serviceID: "device")) {
            try await manager.publish(Fixture.service)
        }
        try await manager.remove(Fixture.service)
        try await manager.publish(Fixture.service)
    }

    @Test func publishingBeforePowerOnFails() async throws {
        let backend = InMemoryBackend(state: .poweredOff)
        let manager = PeripheralManager(backend: backend)
        _ = await manager.nextEvent { $0 == .stateChanged(.poweredOff) }
        await #expect(throws: PeripheralError.notPoweredOn(.poweredOff)) { try await manager.publish(Fixture.service) }
        backend.setState(.poweredOn)
        try await manager.waitUntilPoweredOn()
        try await manager.publish(Fixture.service)
        try await manager.startAdvertising(Advertisement(localName: "blemu"))
        #expect(backend.advertisement?.localName == "blemu")
    }

    @Test func aThousandConcurrentReadsAreEachAnsweredOnce() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phones = (0..<8).map { VirtualCentral(connectingTo: backend, id: "central-\($0)") }
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for phone in phones {
                group.addTask {
                    var count = 0
                    for _ in 0..<125 where try await phone.read("name") == Array("blemu".utf8) { count += 1 }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(values == 1000)
        let counts = manager.requestCounts
        #expect(counts.requests == 1000 && counts.answered == 1000 && counts.responded == 1000)
    }
}

extension InMemoryTests {
    @Test func settingAValueStoresItAndNotifiesSubscribers() async throws {
        let server = ProfileServer(store: ValueStore())
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service], handler: server)
        let phone = VirtualCentral(connectingTo: backend, attMTU: 185)
        try phone.subscribe(to: "hr")
        _ = await manager.nextEvent { $0.isSubscription(to: "hr") }
        #expect(await server.setValue([0, 72], for: Fixture.heartRate, notifying: manager) == .queued)
        var updates = phone.notifications.makeAsyncIterator()
        #expect(await updates.next()?.bytes == [0, 72])
        #expect(server.store.value(of: Fixture.heartRate) == [0, 72])
        #expect(await server.setValue([1], for: Fixture.name, notifying: manager) == .refused)
    }

    @Test func unsubscribingEndsTheSubscriptionWithAnEvent() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        try phone.subscribe(to: "hr")
        _ = await manager.nextEvent { $0.isSubscription(to: "hr") }
        phone.unsubscribe(from: "hr")
        let event = await manager.nextEvent { if case .unsubscribed = $0 { true } else { false } }
        #expect(event == .unsubscribed(phone.central, Fixture.heartRate))
        #expect(await manager.updateValue([1], for: Fixture.heartRate))  // nobody left: nothing to do
        #expect(await manager.notificationCounts.enqueued == 0)
    }

    @Test func poweringOffEndsEveryLinkAndTheStateFollows() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [Fixture.service])
        let phone = VirtualCentral(connectingTo: backend)
        _ = await manager.nextEvent { $0 == .centralConnected(phone.central) }
        backend.setState(.poweredOff)
        #expect(await manager.nextEvent { $0 == .centralDisconnected(phone.central, reason: nil) } != nil)
        #expect(await manager.nextEvent { $0 == .stateChanged(.poweredOff) } != nil)
        #expect(await manager.state == .poweredOff)
        #expect(await manager.connectedCentrals.isEmpty)
    }
}
