import GATTModel
import GATTProfile
import Testing

@testable import Emulation

/// Stored records and the Record Access Control Point on the bundled glucose meter (profiles/glucose-meter.yaml):
/// each RACP procedure of GLS 1.0 as the engine decides it, the records streamed before the indication that ends
/// the procedure.
@Suite struct RecordsTests {
    static func decide(_ engine: inout Protocols, _ request: [UInt8]) -> [EmulationAction] {
        guard case .accept(let actions) = engine.write(request, to: "racp").decision else { return [] }
        return actions
    }

    /// The sequence numbers of the measurements sent, in order, and what the RACP indicated.
    static func sent(_ actions: [EmulationAction]) -> (sequence: [Int], racp: [[UInt8]]) {
        var sequence: [Int] = []
        var racp: [[UInt8]] = []
        for action in actions {
            switch action {
            case .notify("measurement", let value): sequence.append(Int(value[1]) | Int(value[2]) << 8)
            case .indicate("racp", let value): racp.append(value)
            case .wait: break
            default: Issue.record("unexpected \(action)")
            }
        }
        return (sequence, racp)
    }

    @Test func reportAllStreamsEveryRecordThenSuccess() throws {
        var engine = try Protocols(profile: bundledProfile("glucose-meter"))
        let actions = Self.decide(&engine, [0x01, 0x01])
        #expect(Self.sent(actions).sequence == [1, 2, 3, 4, 5])
        #expect(Self.sent(actions).racp == [[0x06, 0x00, 0x01, 0x01]])
        // The indication comes last, after every record as GLS requires of Report Stored Records, and after a wait:
        // bluetoothd keeps the order of one characteristic's updates, not two (docs/bluez.md, "Notifications").
        #expect(actions.last == .indicate(characteristicID: "racp", value: [0x06, 0x00, 0x01, 0x01]))
        #expect(actions.dropLast().last == .wait(.milliseconds(500)))
    }

    @Test func operatorsSelectBySequenceNumberFirstAndLast() throws {
        var engine = try Protocols(profile: bundledProfile("glucose-meter"))
        #expect(Self.sent(Self.decide(&engine, [0x01, 0x03, 0x01, 0x04, 0x00])).sequence == [4, 5])
        #expect(Self.sent(Self.decide(&engine, [0x01, 0x05])).sequence == [1])
        #expect(Self.sent(Self.decide(&engine, [0x01, 0x06])).sequence == [5])
        #expect(Self.sent(Self.decide(&engine, [0x04, 0x01])).racp == [[0x05, 0x00, 0x05, 0x00]])
        #expect(Self.sent(Self.decide(&engine, [0x04, 0x03, 0x01, 0x04, 0x00])).racp == [[0x05, 0x00, 0x02, 0x00]])
        // From a sequence number past the last: no records found.
        let none = Self.sent(Self.decide(&engine, [0x01, 0x03, 0x01, 0x09, 0x00]))
        #expect(none.sequence.isEmpty && none.racp == [[0x06, 0x00, 0x01, 0x06]])
    }

    @Test func anOperatorTheOpCodeDoesNotTakeAndAnUnknownOpCodeAreAnswered() throws {
        var engine = try Protocols(profile: bundledProfile("glucose-meter"))
        #expect(Self.sent(Self.decide(&engine, [0x01, 0x09])).racp == [[0x06, 0x00, 0x01, 0x04]])
        #expect(Self.sent(Self.decide(&engine, [0x07, 0x01])).racp == [[0x06, 0x00, 0x07, 0x02]])
        // Null where an operator must be: Invalid Operator.
        #expect(Self.sent(Self.decide(&engine, [0x01, 0x00])).racp == [[0x06, 0x00, 0x01, 0x03]])
    }

    @Test func deleteEmptiesTheStoreAndResetRefillsIt() throws {
        var engine = try Protocols(profile: bundledProfile("glucose-meter"))
        #expect(Self.sent(Self.decide(&engine, [0x02, 0x01])).racp == [[0x06, 0x00, 0x02, 0x01]])
        #expect(Self.sent(Self.decide(&engine, [0x04, 0x01])).racp == [[0x05, 0x00, 0x00, 0x00]])
        let empty = Self.sent(Self.decide(&engine, [0x01, 0x01]))
        #expect(empty.sequence.isEmpty && empty.racp == [[0x06, 0x00, 0x01, 0x06]])
        engine.reset()
        #expect(engine.records["readings"]?.count == 5)
    }

    /// A record built from `fields` keeps the characteristic's other fields: flags, year, the time of day.
    @Test func aRecordWrittenByItsFieldsKeepsTheOthers() throws {
        let profile = try bundledProfile("glucose-meter")
        let second = try #require(profile.behaviour.records.first?.initial[1])
        let layout = try #require(profile.characteristic(id: "measurement")?.layout)
        let fields = try #require(layout.decode(second))
        #expect(fields[1] == .integer(2) && fields[2] == .integer(2026) && fields[4] == .integer(2))
        #expect(abs((fields[8].number ?? 0) - 0.0011) < 0.000_01, "\(fields[8])")
    }
}
