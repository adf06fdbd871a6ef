import Emulation
import Foundation
import GATTModel
import GATTProfile
import Peripheral
import PeripheralTesting
import Testing

@Suite struct EmulatorTests {
    @Test func heartRateScheduleNotifiesASubscribedCentralWithChangingBPM() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "heart-rate-measurement")
        var updates = central.notifications.makeAsyncIterator()
        var values: [[UInt8]] = []
        for _ in 0..<5 {
            rig.clock.advance(by: .seconds(1))
            values.append(try #require(await updates.next()).bytes)
        }
        #expect(values.allSatisfy { $0.count == 2 && $0[0] == 0x06 })
        #expect(Set(values.map { $0[1] }).count > 1)
        #expect(values.allSatisfy { (55...110).contains($0[1]) })
    }

    @Test func thermostatSetPointWriteMovesTheTemperatureTowardIt() async throws {
        let rig = try await Rig(try bundledProfile("thermostat"))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend, security: .encrypted)
        try await rig.subscribe(central, to: "temperature")
        try await central.write([0xC4, 0x09], to: "set-point")  // 2500 centidegrees
        var updates = central.notifications.makeAsyncIterator()
        var temperatures: [Int16] = []
        for _ in 0..<3 {
            rig.clock.advance(by: .seconds(1))
            temperatures.append(try #require(await updates.next()).bytes.littleEndianInt16)
        }
        #expect(temperatures == temperatures.sorted())
        #expect(temperatures.allSatisfy { $0 > 2150 && $0 < 2500 })
        #expect(try await central.read("set-point") == [0xC4, 0x09])
    }

    @Test func aScheduleComposesOnWhatACentralWrote() async throws {
        // A writable value whose last field a schedule generates: the other fields are the central's.
        let setting = Characteristic(
            id: "setting", uuid: BluetoothUUID(0xFFF1), properties: [.read, .write, .notify],
            value: .dynamic([0, 0, 0]),
            layout: ValueLayout(
                ["mode", "speed", "level"].map { FieldSpec(name: $0, type: .unsigned(bytes: 1)) }))
        let profile = PeripheralProfile(
            name: "blemu Setting",
            services: [Service(id: "settings", uuid: BluetoothUUID(0xFFF0), characteristics: [setting])],
            behaviour: Behaviour(schedules: [
                Schedule(
                    characteristicID: "setting", action: .notify, interval: .seconds(1), start: .launch,
                    generators: [
                        FieldGenerator(
                            field: "level", generator: .counter(start: 1, step: 1, range: 1...9, wraps: true))
                    ])
            ]))
        let rig = try await Rig(profile)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "setting")
        var updates = central.notifications.makeAsyncIterator()
        // A whole value, then the rest of it from an offset (a write replaces everything from its offset on): each
        // tick keeps what the central left.
        try await central.write([5, 6, 0], to: "setting")
        rig.clock.advance(by: .seconds(1))
        #expect(try #require(await updates.next()).bytes == [5, 6, 1])
        try await central.write([9, 0], to: "setting", offset: 1)
        rig.clock.advance(by: .seconds(1))
        #expect(try #require(await updates.next()).bytes == [5, 9, 2])
    }

    @Test func writesAlternatingBetweenAPlainAndARuledCharacteristicEachGetTheirOwnAnswer() async throws {
        let rule = WriteRule(
            characteristicID: "control", actions: [.validate(.allowedValues([[0x01]]), error: ATTError(rawValue: 0x80))]
        )
        let rig = try await Rig(Fixtures.thermostat(writeRules: [rule]))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend, security: .encrypted)
        for round in UInt8(2)...4 {
            try await central.write([round], to: "mode")
            #expect(try await central.read("mode") == [round])
            await #expect(throws: ATTError(rawValue: 0x80)) { try await central.write([round], to: "control") }
        }
    }

    @Test func faultRejectsExactlyTheNthRead() async throws {
        var profile = try bundledProfile("heart-rate")
        profile.behaviour.faults = [
            Fault(trigger: .request(.read, characteristicID: "battery-level", nth: 2), effect: .reject(.unlikelyError))
        ]
        let rig = try await Rig(profile)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        #expect(try await central.read("battery-level") == [87])
        await #expect(throws: ATTError.unlikelyError) { try await central.read("battery-level") }
        #expect(try await central.read("battery-level") == [87])
    }

    @Test func timedDisconnectFaultDropsEveryConnectedCentral() async throws {
        var profile = try bundledProfile("heart-rate")
        profile.behaviour.faults = [Fault(trigger: .after(.seconds(600)), effect: .disconnect)]
        let rig = try await Rig(profile)
        await rig.start()
        let first = VirtualCentral(connectingTo: rig.backend, id: "phone")
        let second = VirtualCentral(connectingTo: rig.backend, id: "watch")
        try await rig.subscribe(first, to: "battery-level")
        #expect(first.isConnected && second.isConnected)
        rig.clock.advance(by: .seconds(600))
        for central in [first, second] {
            _ = await rig.recorder.next { if case .disconnected(central.central.id, _) = $0 { true } else { false } }
        }
        #expect(!first.isConnected && !second.isConnected)
        // The subscriber's notifications end: the central sees the link go.
        var updates = first.notifications.makeAsyncIterator()
        while await updates.next() != nil {}
        #expect(await rig.manager.connectedCentrals.isEmpty)
        #expect(rig.recorder.records.contains { $0.event == .fault("disconnect", characteristicID: nil) })
    }

    @Test func requestDisconnectFaultAnswersTheRequestFirst() async throws {
        var profile = try bundledProfile("heart-rate")
        profile.behaviour.faults = [
            Fault(trigger: .request(.read, characteristicID: "battery-level", nth: 2), effect: .disconnect)
        ]
        let rig = try await Rig(profile)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        #expect(try await central.read("battery-level") == [87])
        #expect(central.isConnected)
        #expect(try await central.read("battery-level") == [87])
        _ = await rig.recorder.next { if case .disconnected = $0 { true } else { false } }
        #expect(!central.isConnected)
        let counts = rig.manager.requestCounts
        #expect(counts.requests == 2 && counts.answered == 2)
    }

    @Test func delayedAnswerStillCountsOnce() async throws {
        var profile = try bundledProfile("heart-rate")
        profile.behaviour.faults = [
            Fault(trigger: .request(.read, characteristicID: "battery-level", nth: 1), effect: .delay(.seconds(2)))
        ]
        let rig = try await Rig(profile)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        async let value = central.read("battery-level")
        _ = await rig.recorder.next { if case .fault = $0 { true } else { false } }
        rig.clock.advance(by: .seconds(2))
        #expect(try await value == [87])
        let counts = rig.manager.requestCounts
        #expect(counts.requests == 1 && counts.answered == 1 && counts.responded == 1 && counts.refusedLate == 0)
    }

    /// At shutdown a request a delay fault holds is answered at once, with what it would have got,
    /// and so is one that arrives after the release; the clock never moves.
    @Test func releasingHeldRequestsAnswersThemNowAndLaterOnesAtOnce() async throws {
        var profile = try bundledProfile("heart-rate")
        profile.behaviour.faults = [
            Fault(trigger: .request(.read, characteristicID: "battery-level", nth: 1), effect: .delay(.seconds(5))),
            Fault(trigger: .request(.read, characteristicID: "battery-level", nth: 2), effect: .delay(.seconds(5))),
        ]
        let rig = try await Rig(profile)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        async let held = central.read("battery-level")
        _ = await rig.recorder.next { if case .fault = $0 { true } else { false } }
        #expect(rig.manager.requestCounts.answered == 0)
        rig.emulator.releaseHeldRequests()
        #expect(try await held == [87])
        #expect(try await central.read("battery-level") == [87])
        let counts = rig.manager.requestCounts
        #expect(counts.requests == 2 && counts.answered == 2 && counts.refusedLate == 0)
    }

    /// The transfer profile on a queue and link of one update, subscribed by a central that reads nothing until the
    /// emulator has been told "full": the transfer waits in the outbox, part sent.
    private func transferWaitingOnAFullQueue() async throws -> (Rig, VirtualCentral) {
        let rig = try await Rig(
            try bundledProfile("transfer"), configuration: .init(queueCapacity: 1), linkCapacity: 1)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        try central.subscribe(to: "transfer-text")
        _ = await rig.recorder.next { if case .queueFull = $0 { true } else { false } }
        return (rig, central)
    }

    @Test func transferTextArrivesChunkedEndingInEOMWithNothingLostWhenTheQueueFills() async throws {
        // The retry path must run: the transfer waits on a full queue first.
        let (rig, central) = try await transferWaitingOnAFullQueue()
        var chunks: [[UInt8]] = []
        for await update in central.notifications {
            chunks.append(update.bytes)
            if update.bytes == Array("EOM".utf8) { break }
        }
        let text = String(decoding: chunks.dropLast().flatMap { $0 }, as: UTF8.self)
        #expect(
            text
                == "Hello from blemu! This text travels in 20-byte chunks, the way Apple's BTLE Transfer sample sends it."
        )
        #expect(chunks.allSatisfy { $0.count <= 20 })
        let counters = await rig.emulator.counters()
        #expect(counters.notifications.refusedFull > 0 && counters.notifications.dropped == 0 && counters.waiting == 0)
    }

    /// A central that unsubscribes while a transfer waits on a full queue gets none of the rest: the transfer leaves
    /// the outbox, and its next subscription is sent the whole text again from the start.
    @Test(.timeLimit(.minutes(1))) func aTransferStopsWhenItsCentralUnsubscribesAndStartsOverOnTheNext() async throws {
        let (rig, central) = try await transferWaitingOnAFullQueue()
        #expect(await rig.emulator.counters().waiting == 1)
        central.unsubscribe(from: "transfer-text")
        _ = await rig.recorder.next { if case .unsubscribed = $0 { true } else { false } }
        #expect(await rig.emulator.counters().waiting == 0)
        try central.subscribe(to: "transfer-text")
        // What the link held before the unsubscription may still arrive first; the text follows whole, once.
        var chunks: [[UInt8]] = []
        for await update in central.notifications {
            chunks.append(update.bytes)
            if update.bytes == Array("EOM".utf8) { break }
        }
        let start = try #require(chunks.lastIndex(of: Array("Hello from blemu! Th".utf8)))
        #expect(start <= 2, "\(chunks.count) chunks, the second transfer from \(start)")
        // Sent, as the event log says: the first transfer's chunks before the unsubscription, none after it.
        let eom = Array("EOM".utf8)
        _ = await rig.recorder.next { if case .notification("transfer-text", eom, _, _) = $0 { true } else { false } }
        let sent = rig.recorder.records.filter {
            if case .notification("transfer-text", _, _, _) = $0.event { true } else { false }
        }
        #expect(sent.count <= chunks.count - start + 2, "\(sent.count) chunks sent")
        let text = String(decoding: chunks[start...].dropLast().flatMap { $0 }, as: UTF8.self)
        #expect(
            text
                == "Hello from blemu! This text travels in 20-byte chunks, the way Apple's BTLE Transfer sample sends it."
        )
    }

    /// A central that stops reading holds at most the outbox's capacity of updates: a `notify` burst that does not fit
    /// is refused whole, with the reason, and an update a value change makes is dropped, counted and recorded.
    @Test(.timeLimit(.minutes(1))) func aCentralThatStopsReadingHoldsAtMostTheOutboxAndTheRestIsRefusedOrCounted()
        async throws
    {
        let rig = try await Rig(
            Fixtures.heartRate(schedules: []), configuration: .init(queueCapacity: 1), linkCapacity: 1)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "battery-level")
        // One burst as large as a `notify` may ask for: accepted, the queue takes what it can, the rest waits.
        try await rig.emulator.notify("battery-level", times: Emulator.outboxCapacity)
        let waiting = await rig.emulator.counters().waiting
        #expect(waiting > Emulator.outboxCapacity - 5 && waiting < Emulator.outboxCapacity, "\(waiting)")
        // A burst that fits the room left is accepted; one more update is not: refused whole, nothing queued.
        try await rig.emulator.notify("battery-level", times: Emulator.outboxCapacity - waiting)
        #expect(await rig.emulator.counters().waiting == Emulator.outboxCapacity)
        let refusal = await #expect(throws: ControlError.self) { try await rig.emulator.notify("battery-level") }
        #expect(refusal?.description.contains("1 more do not fit") == true, "\(String(describing: refusal))")
        #expect(await rig.emulator.counters().waiting == Emulator.outboxCapacity)
        // A value set meanwhile is stored; its notification has no room and is dropped, counted and recorded.
        try await rig.emulator.set([50], for: "battery-level")
        #expect(try await rig.emulator.value(of: "battery-level") == [50])
        let dropped = await rig.recorder.next { if case .outboxFull = $0 { true } else { false } }
        guard case .outboxFull("battery-level", 1)? = dropped else {
            Issue.record("expected one update of battery-level dropped, got \(String(describing: dropped))")
            return
        }
        let counters = await rig.emulator.counters()
        #expect(counters.outboxDropped == 1 && counters.waiting == Emulator.outboxCapacity)
    }

    /// A `notify` schedule shaped like a transfer used to be turned into one and sent at once, whatever
    /// its interval; now only `action: transfer` streams, and a notify schedule sends one piece per interval.
    @Test(.timeLimit(.minutes(1))) func aNotifyScheduleEndingInEOMKeepsItsInterval() async throws {
        var profile = try bundledProfile("transfer")
        profile.behaviour.schedules[0].action = .notify
        profile.behaviour.schedules[0].interval = .milliseconds(50)
        let rig = try await Rig(profile)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend, attMTU: 53)
        try await rig.subscribe(central, to: "transfer-text")
        var updates = central.notifications.makeAsyncIterator()
        rig.clock.advance(by: .milliseconds(50))
        #expect(await updates.next()?.bytes == Array("Hello from blemu! Th".utf8))
        rig.clock.advance(by: .milliseconds(50))
        #expect(await updates.next()?.bytes == Array("is text travels in 2".utf8))
        #expect(await rig.emulator.counters().notifications.accepted == 2)
    }

    /// An update nobody is subscribed to (as in the moment between a CCCD write and AcquireNotify)
    /// reaches no central and is counted as such, never as sent.
    @Test func anUpdateWithNoSubscriberIsCountedApartFromTheSentOnes() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        await rig.start()
        try await rig.emulator.set([50], for: "battery-level")
        var counters = await rig.emulator.counters()
        #expect(counters.notifications.withoutSubscribers == 1 && counters.notifications.sent == 0)
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "battery-level")
        try await rig.emulator.set([49], for: "battery-level")
        var updates = central.notifications.makeAsyncIterator()
        #expect(await updates.next()?.bytes == [49])
        counters = await rig.emulator.counters()
        #expect(counters.notifications.withoutSubscribers == 1 && counters.notifications.sent == 1)
    }

    @Test func transferChunksFollowTheCentralsMTU() async throws {
        let rig = try await Rig(try bundledProfile("transfer"))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend, attMTU: 53)
        try central.subscribe(to: "transfer-text")
        var chunks: [[UInt8]] = []
        for await update in central.notifications {
            chunks.append(update.bytes)
            if update.bytes == Array("EOM".utf8) { break }
        }
        #expect(chunks.map(\.count) == [50, 50, 1, 3])  // 101 bytes of text, then EOM
    }
}
