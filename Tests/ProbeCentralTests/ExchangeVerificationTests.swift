import Emulation
import GATTModel
import GATTProfile
import Testing

@testable import ProbeCentral

/// `blemu verify --writes` on a control point: the profile's declared exchanges (`ExchangePlanner`) made against a
/// device, here the recorded sensor (Fixtures/5.82/cycling-speed-cadence.json) answering as a profile's engine
/// does, and judged: the right device passes every exchange, a device with one wrong answer fails exactly that one
/// with what was sent, expected and seen.
struct ExchangeVerificationTests {
    typealias Fixtures = ProfileVerifierTests

    /// The exchange writes for `profile`'s sensor, answered by `device`'s engine as bluetoothd carries the answers:
    /// a refusal as the code it delivers, each value sent on a characteristic the central listens to.
    static func verified(
        _ profile: PeripheralProfile, device: PeripheralProfile
    ) throws -> [Verification.Check] {
        var report = try Fixtures.report("cycling-speed-cadence")
        let plan = try ExchangePlanner.plan(for: profile)
        let writes = WritePlan.writes(for: profile, seen: report, security: .none, exchanges: plan)
        var engine = try WriteRules(profile: device)
        report.writes = writes.map { planned in
            var write = planned
            guard write.outcome == nil, write.isExchange else { return write }
            let listened = Set(write.listens ?? [])
            let updates = writes.flatMap { write -> [ProbeWrite.Update] in
                (write.expects ?? []) + [
                    ProbeWrite.Update(characteristic: write.characteristic, path: write.path, bytes: [])
                ]
            }
            let paths = Dictionary(updates.map { ($0.characteristic, $0.path) }) { first, _ in first }
            switch engine.traced(write.bytes, to: write.characteristic, at: .zero).decision {
            case .reject(let error):
                write.outcome = .refused(WritePlanTests.clientError(error.deliveredThroughBlueZ(on: .write)))
                write.heard = []
            case .accept(let actions):
                write.outcome = .accepted
                write.heard = actions.compactMap { action in
                    switch action {
                    case .notify(let id, let value), .indicate(let id, let value):
                        guard let path = paths[id], listened.contains(path) else { return nil }
                        return ProbeWrite.Update(characteristic: id, path: path, bytes: value)
                    default: return nil
                    }
                }
            }
            return write
        }
        return ProfileVerifier.verify(profile, against: report).checks.filter { $0.category == .write }
    }

    @Test func theSensorAnswersEveryExchangeItsProfileDeclares() throws {
        let profile = try Fixtures.profile("cycling-speed-cadence")
        let checks = try Self.verified(profile, device: profile)
        let exchanges = checks.filter { $0.check.hasPrefix("answers ") }
        // One exchange per case and one for `otherwise`: no case needs another's state first.
        #expect(exchanges.count == 6, "\(checks.map(\.check))")
        #expect(exchanges.allSatisfy { $0.status == .pass }, "\(exchanges.map { "\($0.check): \($0.actual)" })")
        // Every case of the control point's protocol is reached, `otherwise` too.
        let answeredBy = Set(exchanges.map(\.expected))
        for label in ["case 1: malformed", "op is set-cumulative-value", "location is one of", "otherwise"] {
            #expect(answeredBy.contains { $0.contains(label) }, "\(label) not reached: \(answeredBy)")
        }
        // A control point is not read back nor restored: only exchanges are made on it.
        #expect(checks.filter { $0.subject == "sc-control-point" }.allSatisfy { $0.check.hasPrefix("answers ") })
    }

    /// A location its control point moved is the sensor's state, not a broken promise: a value a protocol sets is
    /// checked by its fields, not against its starting bytes.
    @Test func aSensorMovedByItsControlPointStillConforms() throws {
        let profile = try Fixtures.profile("cycling-speed-cadence")
        var report = try Fixtures.report("cycling-speed-cadence")
        for s in report.services.indices {
            for c in report.services[s].characteristics.indices
            where report.services[s].characteristics[c].uuid == "2A5D" {
                report.services[s].characteristics[c].read = .value(ProbeValue(bytes: [0x0C], uuid: "2A5D"))
            }
        }
        let verification = ProfileVerifier.verify(profile, against: report)
        #expect(verification.conforms, "\(verification.text)")
    }

    @Test func aWrongAnswerFailsThatExchangeWithWhatWasSentExpectedAndSeen() throws {
        let profile = try Fixtures.profile("cycling-speed-cadence")
        var firmware = profile
        // The firmware lists the chest among the locations it supports: one byte wrong in one indication.
        let index = try #require(
            firmware.behaviour.protocols[0].cases.firstIndex { item in
                item.conditions == [ProtocolCondition.op(["request-supported-sensor-locations"])]
            })
        firmware.behaviour.protocols[0].cases[index].actions = [
            ProtocolAction.send(
                characteristicID: "sc-control-point", kind: .indicate,
                pieces: [0x10, 0x04, 0x01, 4, 5, 11, 14].map {
                    ValuePiece(type: .unsigned(bytes: 1), source: .literal(.integer($0)))
                })
        ]
        let failed = try Self.verified(profile, device: firmware).filter { $0.status == .fail }
        #expect(failed.map(\.check) == ["answers request-supported-sensor-locations (case 5)"])
        #expect(failed.first?.expected.contains("sc-control-point 10 04 01 04 05 0B 0C") == true, "\(failed)")
        #expect(failed.first?.actual == "04 accepted; sent sc-control-point 10 04 01 04 05 0B 0E")
    }

    @Test func aRefusalWhereTheProfileAnswersFails() throws {
        let profile = try Fixtures.profile("cycling-speed-cadence")
        var firmware = profile
        firmware.behaviour.protocols[0].otherwise = [ProtocolAction.reject(.requestNotSupported)]
        let failed = try Self.verified(profile, device: firmware).filter { $0.status == .fail }
        #expect(failed.count == 1 && failed.first?.actual.contains("refused with") == true, "\(failed)")
        #expect(failed.first?.expected.hasPrefix("accepted, then sc-control-point 10 FF 02") == true, "\(failed)")
    }
}
