import GATTModel
import GATTProfile
import Testing

@testable import Emulation

/// The exchanges `blemu verify --writes` makes on a control point, worked out from the profile with its own engine as
/// the model: every case reached from the state the profile starts in, each with the answer the case gives there.
@Suite struct ExchangePlannerTests {
    static func plan(_ name: String) throws -> ExchangePlan { try ExchangePlanner.plan(for: bundledProfile(name)) }

    @Test func theTrainerPlanReachesEveryCaseAndSetsUpTheStateEachNeeds() throws {
        let plan = try Self.plan("indoor-bike")
        #expect(plan.unreached.isEmpty, "\(plan.unreached)")
        let cases = try #require(try bundledProfile("indoor-bike").behaviour.protocols.first?.cases.count)
        let reached = Set(plan.exchanges.map(\.answeredBy))
        for index in 1...cases {
            #expect(reached.contains { $0.hasPrefix("case \(index): ") }, "case \(index) not reached: \(reached)")
        }
        #expect(reached.contains("otherwise"))
        // Control Not Permitted (FTMS 4.16.2) needs control taken back first: a Reset answered with success, then
        // the next Reset refused with 0x05.
        let refused = try #require(plan.exchanges.firstIndex { $0.answeredBy.hasPrefix("case 3: ") })
        #expect(
            plan.exchanges[refused].updates == [.init(characteristicID: "control-point", value: [0x80, 0x01, 0x05])])
        #expect(plan.exchanges[..<refused].contains { $0.request == [0x01] && $0.answeredBy.hasPrefix("case 4: ") })
        // Set Target Power in range: the response, then the status with the power.
        let target = try #require(plan.exchanges.first { $0.answeredBy.hasPrefix("case 5: ") })
        #expect(target.request == [0x05, 0x00, 0x00] && target.rejection == nil)
        #expect(
            target.updates == [
                .init(characteristicID: "control-point", value: [0x80, 0x05, 0x01]),
                .init(characteristicID: "status", value: [0x08, 0x00, 0x00]),
            ])
        let malformed = try #require(plan.exchanges.first)
        #expect(malformed.request == [0x05, 0x00] && malformed.reading == "malformed")
        let unknown = try #require(plan.exchanges.first { $0.answeredBy == "otherwise" })
        #expect(unknown.request == [0xFF] && unknown.reading == "unknown 0xFF")
    }

    @Test func theGlucoseMeterPlanSendsTheRecordsBeforeTheResponseAndWaitsBetween() throws {
        let plan = try Self.plan("glucose-meter")
        #expect(plan.unreached.isEmpty, "\(plan.unreached)")
        // "No records found" comes once the records are deleted, after every report that finds them.
        let deleted = try #require(plan.exchanges.firstIndex { $0.reading == "delete-all" })
        #expect(plan.exchanges[..<deleted].filter { $0.reading.hasPrefix("report-") }.count >= 4)
        let reportAll = try #require(plan.exchanges.first { $0.reading == "report-all" && $0.updates.count > 1 })
        #expect(reportAll.updates.last?.characteristicID == "racp")
        #expect(reportAll.updates.dropLast().allSatisfy { $0.characteristicID != "racp" })
        #expect(reportAll.waits > .zero)
    }

    /// A case no request reaches (state that nothing sets) is reported, not guessed at.
    @Test func aCaseNoRequestReachesIsReported() throws {
        var profile = try bundledProfile("indoor-bike")
        profile.behaviour.protocols[0].cases.insert(
            ProtocolCase(
                conditions: [.op(["start-or-resume"]), .state("target-power", .oneOf([.integer(-5)]))],
                actions: [.reject(.unlikelyError)]), at: 1)
        let plan = try ExchangePlanner.plan(for: profile)
        #expect(plan.unreached.map(\.answeredBy) == ["case 2: op is start-or-resume and target-power is -5"])
    }
}
