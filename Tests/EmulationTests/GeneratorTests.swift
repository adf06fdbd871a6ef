import Foundation
import GATTModel
import GATTProfile
import Testing

@testable import Emulation

@Suite struct GeneratorTests {
    /// Runs a generator `count` times, one tick a second, and returns the numbers it produced.
    func numbers(_ generator: Generator, count: Int) throws -> [Double] {
        var state = try GeneratorState(generator)
        return (0..<count).map { state.next(at: .seconds($0)).number ?? .nan }
    }

    @Test func constantAlwaysGivesItsValue() throws {
        var state = try GeneratorState(.constant(.integer(7)))
        #expect(state.next(at: .zero) == .integer(7))
        #expect(state.next(at: .seconds(100)) == .integer(7))
    }

    @Test func repeatingSequenceCyclesAndOnceSequenceKeepsItsLastValue() throws {
        var cycled = try GeneratorState(.sequence([.integer(1), .integer(2)], repeats: true))
        #expect((0..<5).map { _ in cycled.next(at: .zero) } == [1, 2, 1, 2, 1].map { FieldValue.integer($0) })
        var once = try GeneratorState(.sequence([.integer(1), .integer(2)], repeats: false))
        #expect((0..<4).map { _ in once.next(at: .zero) } == [1, 2, 2, 2].map { FieldValue.integer($0) })
    }

    @Test func counterWrapsToTheOtherBound() throws {
        let values = try numbers(.counter(start: 2, step: -1, range: 0...3, wraps: true), count: 6)
        #expect(values == [2, 1, 0, 3, 2, 1])
    }

    @Test func counterThatDoesNotWrapStopsAtItsBound() throws {
        let values = try numbers(.counter(start: 88, step: 5, range: 0...100, wraps: false), count: 5)
        #expect(values == [88, 93, 98, 100, 100])
    }

    /// A value set from outside (`set-field`) is where a counter, walk or follow goes on from; a sequence keeps its own.
    @Test func aRebasedGeneratorGoesOnFromTheValueSet() throws {
        var counter = try GeneratorState(.counter(start: 12840, step: 4, range: 0...4_294_967_295, wraps: true))
        _ = counter.next(at: .zero)
        counter.rebase(to: 1000)
        #expect([counter.next(at: .zero), counter.next(at: .zero)] == [.real(1004), .real(1008)])
        counter.rebase(to: 4_294_967_294)
        #expect(counter.next(at: .zero) == .real(0), "past its bound a counter still wraps")
        var walk = try GeneratorState(.randomWalk(start: 50, step: 2, range: 0...100, seed: 1))
        walk.rebase(to: 90)
        #expect((88...92).contains(walk.next(at: .zero).number ?? 0))
        var follow = try GeneratorState(.follow(state: "target", ratePerSecond: 10, start: 0))
        _ = follow.next(at: .zero, state: ["target": .integer(100)])
        follow.rebase(to: 60)
        #expect(follow.next(at: .seconds(1), state: ["target": .integer(100)]) == .real(70))
        var sequence = try GeneratorState(.sequence([.integer(1), .integer(2)], repeats: true))
        sequence.rebase(to: 9)
        #expect(sequence.next(at: .zero) == .integer(1))
    }

    @Test func sineIsAtItsExtremesAtQuarterPeriods() throws {
        var state = try GeneratorState(.sine(period: .seconds(4), amplitude: 10, offset: 50))
        #expect(abs(state.next(at: .zero).number! - 50) < 1e-9)
        #expect(abs(state.next(at: .seconds(1)).number! - 60) < 1e-9)
        #expect(abs(state.next(at: .seconds(2)).number! - 50) < 1e-9)
        #expect(abs(state.next(at: .seconds(3)).number! - 40) < 1e-9)
        #expect(abs(state.next(at: .milliseconds(4500)).number! - (50 + 10 * sin(Double.pi / 4))) < 1e-9)
    }

    @Test func randomWalkWithTheSameSeedReproducesTheSameHundredValues() throws {
        let walk = Generator.randomWalk(start: 72, step: 2, range: 55...110, seed: 10)
        let first = try numbers(walk, count: 100)
        #expect(try numbers(walk, count: 100) == first)
        #expect(try numbers(.randomWalk(start: 72, step: 2, range: 55...110, seed: 11), count: 100) != first)
        #expect(first[0] == 72)
        #expect(first.allSatisfy { (55...110).contains($0) })
        #expect(zip(first, first.dropFirst()).allSatisfy { abs($1 - $0) <= 2 })
    }

    @Test func randomWalkPinnedAtABoundStaysInside() throws {
        let values = try numbers(.randomWalk(start: 0, step: 5, range: 0...1, seed: 1), count: 200)
        #expect(values.allSatisfy { (0...1).contains($0) })
        #expect(Set(values).count > 2)
    }

    @Test func splitMixMatchesItsReferenceOutput() {
        // The first outputs of SplitMix64 seeded with 0, from the reference C implementation (Vigna, prng.di.unimi.it).
        var random = SplitMix64(seed: 0)
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
    }

    @Test func replayReadsAHeaderedCSVFromAFileByColumnName() throws {
        let directory = try temporaryDirectory(holding: "run.csv", "time,bpm,spo2\n0,70,98\n1.5,75,97\n\n3,80,96\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = try GeneratorState(.replay(Replay(file: "run.csv", column: "spo2")), baseDirectory: directory)
        let times: [Duration] = [.zero, .seconds(1), .milliseconds(1500), .seconds(2), .seconds(3), .seconds(60)]
        #expect(times.map { state.next(at: $0).number! } == [98, 98, 97, 97, 96, 96])
    }

    @Test func replayWithoutAHeaderUsesTheSecondColumn() throws {
        let track = try ReplayTrack(csv: "0,1\n2,5\n", file: "t.csv", column: nil)
        #expect([-1.0, 0, 1.9, 2, 9].map { track.value(at: $0).number } == [1, 1, 1, 5, 5])
    }

    @Test func malformedReplayRowIsReportedWithFileAndLine() {
        #expect(throws: BehaviourError.replay(file: "bad.csv", line: 3, message: "value `x` is not a number")) {
            try ReplayTrack(csv: "time,value\n0,1\n1,x\n", file: "bad.csv", column: nil)
        }
        let error = #expect(throws: BehaviourError.self) {
            try ReplayTrack(csv: "time,value\n0,1\n", file: "bad.csv", column: "bpm")
        }
        #expect(error?.description == "bad.csv:1: no value column `bpm` in header (time, value)")
    }

    @Test func hexReplayRowsAreWholeValuesAndAMalformedOneIsReported() throws {
        let track = try ReplayTrack(csv: "time,value\n0,0648\n1,06 4A\n", file: "hr.csv", column: nil, format: .hex)
        #expect(track.values == [.bytes([0x06, 0x48]), .bytes([0x06, 0x4A])])
        #expect(throws: BehaviourError.replay(file: "hr.csv", line: 2, message: "value `6G` is not hex bytes")) {
            try ReplayTrack(csv: "time,value\n0,6G\n", file: "hr.csv", column: nil, format: .hex)
        }
    }

    @Test func aHexReplayRowLongerThanTheCharacteristicTakesFailsAtStart() throws {
        let directory = try temporaryDirectory(holding: "long.csv", "time,value\n0,01\n1,010203\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var characteristic = Characteristic(id: "level", uuid: BluetoothUUID(0x2A19), properties: [.notify])
        characteristic.maximumLength = 2
        let error = #expect(throws: BehaviourError.self) {
            try ValueComposer(
                characteristic: characteristic,
                generators: [FieldGenerator(field: nil, generator: .replay(Replay(file: "long.csv", format: .hex)))],
                baseDirectory: directory)
        }
        #expect(error?.description == "long.csv: data row 2 is 3 bytes, over `max-length` 2 of `level`")
    }

    @Test func missingReplayFileFailsAtStart() {
        #expect(throws: BehaviourError.self) {
            try GeneratorState(.replay(Replay(file: "/nonexistent/blemu.csv")))
        }
    }
}
