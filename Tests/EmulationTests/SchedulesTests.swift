import Foundation
import GATTModel
import GATTProfile
import Testing

@testable import Emulation

@Suite struct SchedulesTests {
    @Test func generatedBPMKeepsTheHeartRateFlagsByte() throws {
        var composer = try ValueComposer(
            characteristic: Fixtures.heartRateMeasurement,
            generators: [
                FieldGenerator(field: "bpm", generator: .sequence([.integer(80), .real(90.6)], repeats: true))
            ])
        let first = composer.next(current: [0x06, 72], at: .zero)
        #expect(first.value == [0x06, 80])
        #expect(composer.next(current: first.value, at: .seconds(1)).value == [0x06, 91])
    }

    @Test func outOfRangeValuesAreClampedWithOneWarning() throws {
        var composer = try ValueComposer(
            characteristic: Fixtures.heartRateMeasurement,
            generators: [
                FieldGenerator(field: "bpm", generator: .counter(start: 300, step: 1, range: 0...400, wraps: true))
            ])
        let first = composer.next(current: [0x06, 72], at: .zero)
        #expect(first.value == [0x06, 255])
        #expect(first.warnings.count == 1)
        #expect(composer.next(current: first.value, at: .zero).warnings.isEmpty)
    }

    @Test func undecodableCurrentValueStartsFromZeroedFields() throws {
        var composer = try ValueComposer(
            characteristic: Fixtures.heartRateMeasurement,
            generators: [FieldGenerator(field: "bpm", generator: .constant(.integer(60)))])
        #expect(composer.next(current: [], at: .zero).value == [0x00, 60])
    }

    @Test func unknownFieldIsRefusedWhenTheEngineIsBuilt() {
        #expect(throws: BehaviourError.unknownField(characteristicID: "heart-rate-measurement", field: "rr")) {
            try ValueComposer(
                characteristic: Fixtures.heartRateMeasurement,
                generators: [FieldGenerator(field: "rr", generator: .constant(.integer(1)))])
        }
    }

    @Test func launchScheduleTicksEveryIntervalAndOnlyUpdates() throws {
        var engine = try Schedules(profile: Fixtures.heartRate())
        #expect(engine.nextDeadline == nil)
        engine.start(at: .seconds(5))
        #expect(engine.nextDeadline == .seconds(605))
        #expect(engine.tick(at: .seconds(604)).isEmpty)
        #expect(engine.tick(at: .seconds(605)) == [.update(characteristicID: "battery-level", value: [87])])
        #expect(engine.tick(at: .seconds(1205)) == [.update(characteristicID: "battery-level", value: [86])])
        #expect(engine.value(of: "battery-level") == [86])
    }

    @Test func onlyAValueAScheduleComposesIntoIsKept() throws {
        var engine = try Schedules(profile: Fixtures.heartRate())
        #expect(engine.value(of: "heart-rate-control-point") == nil)
        engine.valueChanged("heart-rate-control-point", to: [1])
        #expect(engine.value(of: "heart-rate-control-point") == nil)
        #expect(engine.value(of: "battery-level") == [87])
        engine.valueChanged("battery-level", to: [50])
        #expect(engine.value(of: "battery-level") == [50])
        // Without schedules nothing is kept, whatever is written.
        var idle = try Schedules(profile: Fixtures.heartRate(schedules: []))
        idle.valueChanged("battery-level", to: [50])
        #expect(idle.value(of: "battery-level") == nil)
    }

    @Test func firstSubscriptionSchedulePausesWhileNobodyIsSubscribed() throws {
        var engine = try Schedules(profile: Fixtures.heartRate())
        engine.start(at: .zero)
        #expect(engine.nextDeadline == .seconds(600))
        engine.subscribersChanged("heart-rate-measurement", count: 1, at: .milliseconds(300))
        #expect(engine.nextDeadline == .milliseconds(1300))
        let actions = engine.tick(at: .milliseconds(1300))
        #expect(actions == [.notify(characteristicID: "heart-rate-measurement", value: [0x06, 72])])
        engine.subscribersChanged("heart-rate-measurement", count: 2, at: .milliseconds(1500))
        #expect(engine.nextDeadline == .milliseconds(2300))
        engine.subscribersChanged("heart-rate-measurement", count: 0, at: .milliseconds(1800))
        #expect(engine.nextDeadline == .seconds(600))
        #expect(engine.tick(at: .milliseconds(2300)).isEmpty)
        engine.subscribersChanged("heart-rate-measurement", count: 1, at: .seconds(10))
        #expect(engine.nextDeadline == .seconds(11))
    }

    /// A test that sets a value must be able to keep it; a held schedule neither ticks nor restarts
    /// on a subscription, and resumes one interval after `resume`.
    @Test func aPausedScheduleHoldsUntilResumedWhateverItsStartRule() throws {
        var engine = try Schedules(profile: Fixtures.heartRate())
        engine.start(at: .zero)
        #expect(engine.pause("battery-level") == 1)
        #expect(engine.nextDeadline == nil)
        #expect(engine.tick(at: .seconds(600)).isEmpty)
        #expect(engine.pause("heart-rate-measurement") == 1)
        engine.subscribersChanged("heart-rate-measurement", count: 1, at: .seconds(601))
        #expect(engine.nextDeadline == nil)
        #expect(engine.statuses.map(\.isPaused) == [true, true] && engine.statuses.allSatisfy { !$0.isRunning })
        #expect(engine.resume("heart-rate-measurement", at: .seconds(700)) == 1)
        #expect(engine.nextDeadline == .seconds(701))
        #expect(engine.resume(nil, at: .seconds(800)) == 2)
        #expect(engine.statuses.map(\.isRunning) == [true, true])
        #expect(engine.tick(at: .seconds(1400)).contains(.update(characteristicID: "battery-level", value: [87])))
        #expect(engine.pause("no-schedule") == 0)
    }

    @Test func aResumedFirstSubscriptionScheduleStaysPausedWithoutSubscribers() throws {
        var engine = try Schedules(profile: Fixtures.heartRate())
        engine.start(at: .zero)
        #expect(engine.pause(nil) == 2)
        #expect(engine.resume(nil, at: .seconds(5)) == 2)
        #expect(engine.nextDeadline == .seconds(605))
        #expect(engine.statuses.first { $0.characteristicID == "heart-rate-measurement" }?.isRunning == false)
    }

    @Test func subscriptionBeforeStartRunsTheScheduleFromStart() throws {
        var engine = try Schedules(profile: Fixtures.heartRate())
        engine.subscribersChanged("heart-rate-measurement", count: 1, at: .zero)
        #expect(engine.nextDeadline == nil)
        engine.start(at: .seconds(2))
        #expect(engine.nextDeadline == .seconds(3))
    }

    @Test func jumpOverSeveralIntervalsFiresOnceAndRealigns() throws {
        var engine = try Schedules(profile: Fixtures.heartRate())
        engine.start(at: .zero)
        let actions = engine.tick(at: .seconds(3000))  // five intervals of 600 s passed
        #expect(actions == [.update(characteristicID: "battery-level", value: [87])])
        #expect(engine.nextDeadline == .seconds(3600))
        #expect(engine.tick(at: .milliseconds(3_600_001)) == [.update(characteristicID: "battery-level", value: [86])])
        #expect(engine.nextDeadline == .seconds(4200))
    }

    @Test func gridPointAfterAHugeJumpIsExact() {
        let next = Schedules.firstGridPoint(
            after: .seconds(86_400), anchor: .milliseconds(7), interval: .milliseconds(50))
        #expect(next == .milliseconds(86_400_007))
    }

    @Test func wholeValueSequenceSendsTextChunksThenHoldsTheLast() throws {
        let text = Characteristic(id: "transfer-text", uuid: BluetoothUUID(0x1111), properties: [.notify])
        let schedule = Schedule(
            characteristicID: "transfer-text", action: .notify, interval: .milliseconds(50), start: .launch,
            generators: [FieldGenerator(field: nil, generator: .sequence([.text("Hi"), .text("EOM")], repeats: false))])
        var engine = try Schedules(
            profile: PeripheralProfile(
                name: "t", services: [Service(id: "s", uuid: BluetoothUUID(0x1112), characteristics: [text])],
                behaviour: Behaviour(schedules: [schedule])))
        engine.start(at: .zero)
        let values = [50, 100, 150].flatMap { engine.tick(at: .milliseconds($0)) }.compactMap(\.value)
        #expect(values == [Array("Hi".utf8), Array("EOM".utf8), Array("EOM".utf8)])
    }

    /// A clone's recording is sent at the times it arrived, from the first subscription, and plays
    /// again one median gap after its last row.
    @Test func aRecordingIsSentAtItsOwnTimesFromTheFirstSubscriptionAndRepeats() throws {
        let directory = try temporaryDirectory(holding: "hr.csv", "time,value\n0.400,0648\n1.400,064A\n1.900,064C\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let schedule = Schedule(
            characteristicID: "heart-rate-measurement", action: .notify, interval: .zero, start: .firstSubscription,
            generators: [
                FieldGenerator(field: nil, generator: .replay(Replay(file: "hr.csv", format: .hex, repeats: true)))
            ])
        #expect(schedule.isRecordedPace)
        var engine = try Schedules(profile: Fixtures.heartRate(schedules: [schedule]), baseDirectory: directory)
        engine.start(at: .zero)
        #expect(engine.nextDeadline == nil)
        #expect(engine.statuses.map(\.isRecordedPace) == [true] && engine.statuses.map(\.interval) == [.zero])
        engine.subscribersChanged("heart-rate-measurement", count: 1, at: .seconds(10))
        // Rows at +0.4, +1.4, +1.9; the pass lasts 1.5 s + the median gap (the upper of 0.5 and 1.0) = 2.5 s.
        var sent: [(Duration, [UInt8])] = []
        while let due = engine.nextDeadline, due < .seconds(15) {
            sent += engine.tick(at: due).compactMap { action in action.value.map { (due, $0) } }
        }
        let milliseconds = sent.map { Int($0.0 / .milliseconds(1)) }
        #expect(milliseconds == [10_400, 11_400, 11_900, 12_900, 13_900, 14_400])
        #expect(sent.map { $0.1[1] } == [0x48, 0x4A, 0x4C, 0x48, 0x4A, 0x4C])
    }

    @Test func aRecordingThatDoesNotRepeatStopsAfterItsLastRowAndSkipsMissedRows() throws {
        let track = try ReplayTrack(csv: "time,value\n0,01\n1,02\n2,03\n", file: "t.csv", column: nil, format: .hex)
        #expect(track.nextRowTime(after: -0.001, repeats: false) == 0)
        #expect(track.nextRowTime(after: 1, repeats: false) == 2)
        #expect(track.nextRowTime(after: 2, repeats: false) == nil)
        // Late by one and a half rows: one firing sends the latest row due, and the next row keeps its time.
        #expect(track.recordedValue(at: 1.5, repeats: false) == .bytes([0x02]))
        #expect(track.nextRowTime(after: 1.5, repeats: true) == 2)
        #expect(track.nextRowTime(after: 2, repeats: true) == 3)
        #expect(track.recordedValue(at: 3.2, repeats: true) == .bytes([0x01]))
    }

    @Test func unknownCharacteristicIsRefused() {
        let schedule = Schedule(
            characteristicID: "nope", action: .update, interval: .seconds(1), start: .launch, generators: [])
        #expect(throws: BehaviourError.unknownCharacteristic("nope")) {
            try Schedules(profile: PeripheralProfile(name: "x", behaviour: Behaviour(schedules: [schedule])))
        }
    }
}
