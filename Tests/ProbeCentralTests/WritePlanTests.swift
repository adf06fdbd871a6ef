import BlueZModel
import Emulation
import Foundation
import GATTModel
import GATTProfile
import Testing

@testable import ProbeCentral

/// `blemu verify --writes`: the writes planned from each bundled profile against what a real central saw of its
/// device (the clone scenario's reports), and the checks made of the answers. The answers come from blemu's own
/// write-rule engine as a central on bluetoothd receives them (`answer(_:with:)`); the clone scenario makes the
/// same writes to a served profile for real.
struct WritePlanTests {
    typealias Fixtures = ProfileVerifierTests

    /// The plan for bundled profile `name` against its 5.82 report.
    static func plan(_ name: String, security: SecurityLevel = .none) throws -> [ProbeWrite] {
        WritePlan.writes(for: try Fixtures.profile(name), seen: try Fixtures.report(name), security: security)
    }

    /// `purpose hex [readsBack]` or `purpose skipped`, for one characteristic's writes.
    static func summary(_ writes: [ProbeWrite], of id: String) -> [String] {
        writes.filter { $0.characteristic == id }.map { write in
            let purpose =
                switch write.purpose {
                case .accepts: "accepts"
                case .refuses(let check, let error): "refuses-\(check) 0x\(Hex.byte(error))"
                case .restores: "restores"
                case .guarded: "guarded"
                case .exchange(let answeredBy, _): "exchange \(answeredBy)"
                }
            if case .notMade? = write.outcome { return "\(purpose) skipped" }
            return "\(purpose) \(write.hex)" + (write.readsBack.map { " reads \($0)" } ?? "")
        }
    }

    @Test func theHeartRateControlPointIsSentItsOneAllowedValueAndAnotherRefusedWith0x80() throws {
        let writes = try Self.plan("heart-rate")
        #expect(
            Self.summary(writes, of: "heart-rate-control-point") == [
                "accepts 01", "refuses-allowed 0x80 02", "restores skipped",
            ])
        let answered = writes.allSatisfy { $0.withResponse }
        #expect(answered)
        // Write-only: what it held before is unknown, so nothing can be written back.
        let restore = writes.first { $0.purpose == .restores }
        #expect(
            restore?.outcome
                == .notMade("not readable: its value before the writes is unknown, so it is not written back"))
        // Only writable characteristics are written.
        #expect(Set(writes.map(\.characteristic)) == ["heart-rate-control-point"])
    }

    @Test func encryptedWritesWaitForPairingAndThenEachCheckGetsAValueOnlyItRefuses() throws {
        let unpaired = try Self.plan("thermostat")
        #expect(!unpaired.isEmpty)
        // Unpaired, each is first written what it holds, which the device must refuse; nothing else is written.
        let report = try Fixtures.report("thermostat")
        for id in ["set-point", "mode"] {
            let uuid = try #require(try Fixtures.profile("thermostat").characteristics.first { $0.id == id }?.uuid)
            let held = try #require(report.characteristics.first { BluetoothUUID($0.uuid) == uuid }?.read?.value?.hex)
            #expect(Self.summary(unpaired, of: id).first == "guarded \(held)")
        }
        for write in unpaired where write.purpose != .guarded {
            guard case .notMade(let why)? = write.outcome else {
                Issue.record("\(write.characteristic) is written unpaired")
                continue
            }
            #expect(why.hasPrefix("writing needs a link that is encrypted, this one is not paired (--pair"), "\(why)")
        }
        // Just Works is enough for the thermostat's encrypted writes.
        let paired = try Self.plan("thermostat", security: .encrypted)
        let original = try #require(
            Fixtures.report("thermostat").characteristics.first { $0.uuid.hasPrefix("8D3A0002") }?.read?.value?.hex)
        // 2100 (21.00 °C) is the declared value; 499 is one below the rule's range, as an s16.
        #expect(
            Self.summary(paired, of: "set-point") == [
                "accepts 3408 reads 3408", "refuses-range 0x80 F301", "restores \(original) reads \(original)",
            ])
        #expect(Self.summary(paired, of: "mode").prefix(2) == ["accepts 01 reads 01", "refuses-allowed 0x81 04"])
    }

    /// The security checks of the thermostat's unpaired writes against a device running `device`.
    static func guardedChecks(
        _ device: PeripheralProfile, pairsByItself: Bool = false
    ) throws -> [Verification.Check] {
        let profile = try Fixtures.profile("thermostat")
        var report = try Fixtures.report("thermostat")
        report.writes = try answer(try plan("thermostat"), with: device, pairsByItself: pairsByItself)
        return ProfileVerifier.verify(profile, against: report).checks.filter {
            $0.category == .security && $0.check == "write"
        }
    }

    @Test func aGuardedWriteRefusedUnpairedPasses() throws {
        let checks = try Self.guardedChecks(try Fixtures.profile("thermostat"))
        #expect(checks.map(\.subject) == ["set-point", "mode"])
        #expect(checks.allSatisfy { $0.status == .pass }, "\(checks)")
    }

    @Test func aPairingTheGuardedWriteSetOffPassesAndLeavesTheNextOneUntold() throws {
        let checks = try Self.guardedChecks(try Fixtures.profile("thermostat"), pairsByItself: true)
        #expect(checks.map(\.status) == [.pass, .skip], "\(checks)")
        #expect(checks.first?.actual.contains("bluetoothd's client paired by itself") == true)
    }

    @Test func anEncryptedWriteLeftOpenIsOneFailureAndChangesNothing() throws {
        var firmware = try Fixtures.profile("thermostat")
        firmware.services = firmware.services.map { service in
            var service = service
            service.characteristics = service.characteristics.map { characteristic in
                var characteristic = characteristic
                if characteristic.id == "set-point" { characteristic.security = SecurityRequirements() }
                return characteristic
            }
            return service
        }
        let profile = try Fixtures.profile("thermostat")
        var report = try Fixtures.report("thermostat")
        report.writes = try Self.answer(try Self.plan("thermostat"), with: firmware)
        let failed = Fixtures.failures(ProfileVerifier.verify(profile, against: report))
        #expect(failed == ["security set-point write"])
        #expect(ProfileVerifier.leftWritten(report.writes ?? []).isEmpty)
    }

    @Test func anAuthenticatedWriteWaitsForAPasskeyPairing() throws {
        let justWorks = try Self.plan("secure", security: .encrypted)
        #expect(
            Self.summary(justWorks, of: "status") == [
                "accepts skipped", "refuses-length 0x0D skipped", "restores skipped",
            ])
        guard case .notMade(let why)? = justWorks.first?.outcome else { return }
        #expect(why.contains("this one is encrypted (--pair --passkey N pairs so)"), "\(why)")
        let passkey = try Self.plan("secure", security: .authenticated)
        #expect(Self.summary(passkey, of: "status").first == "accepts 417661696C61626C65 reads 417661696C61626C65")
    }

    @Test func aLengthCheckThatMaxLengthAlreadyBoundsIsTestedBelowItsMinimum() throws {
        // A control point with max-length 5 and a 1-5 length check, so only an empty value fails the check alone: the
        // sensor as it was before its control point became a protocol.
        var profile = try Fixtures.profile("cycling-speed-cadence")
        profile.behaviour.protocols = []
        profile.behaviour.writeRules = [
            WriteRule(
                characteristicID: "sc-control-point",
                actions: [.validate(.length(1...5), error: .invalidAttributeValueLength), .store])
        ]
        for service in profile.services.indices {
            for index in profile.services[service].characteristics.indices
            where profile.services[service].characteristics[index].id == "sc-control-point" {
                profile.services[service].characteristics[index].maximumLength = 5
            }
        }
        let writes = WritePlan.writes(
            for: profile, seen: try Fixtures.report("cycling-speed-cadence"), security: .none)
        let summary = Self.summary(writes, of: "sc-control-point")
        #expect(summary.count == 3)
        #expect(summary.dropFirst().first == "refuses-length 0x0D ")
    }

    @Test func aFaultOnWritesLeavesTheCharacteristicUnwritten() throws {
        var profile = try Fixtures.profile("heart-rate")
        profile.behaviour.faults.append(
            Fault(trigger: .request(.write, characteristicID: nil, nth: 2), effect: .reject(.unlikelyError)))
        let writes = WritePlan.writes(for: profile, seen: try Fixtures.report("heart-rate"), security: .none)
        let unwritten = writes.allSatisfy { if case .notMade? = $0.outcome { true } else { false } }
        #expect(!writes.isEmpty && unwritten)
    }

    /// The error a central on bluetoothd's client API gets for `error` (5.66 src/gatt-client.c
    /// `create_gatt_dbus_error`, which `ATTErrorCode` reads back).
    static func clientError(_ error: ATTError) -> ProbeFailure {
        switch error.rawValue {
        case 0x03: ProbeFailure(name: BlueZName.Error.notPermitted, message: "Write not permitted")
        case 0x05, 0x0C, 0x0F: ProbeFailure(name: BlueZName.Error.notPermitted, message: "Not paired")
        case 0x0D: ProbeFailure(name: BlueZName.Error.invalidArguments, message: "Invalid Length")
        case 0x08: ProbeFailure(name: BlueZName.Error.notAuthorized, message: "Not authorized")
        case 0x06: ProbeFailure(name: BlueZName.Error.notSupported, message: "Not supported")
        default:
            ProbeFailure(
                name: BlueZName.Error.failed, message: "Operation failed with ATT error: 0x\(Hex.byte(error.rawValue))")
        }
    }

    /// The plan carried out against blemu's write-rule engine for `device`, as a central on bluetoothd sees it: a
    /// refusal arrives as bluetoothd delivers it, and a read back returns what the engine holds. A `guarded` write
    /// (the link is not paired) to a characteristic the device guards is refused by bluetoothd before the engine
    /// sees it, and the central's pairing, which `pairsByItself` says succeeds, or not.
    static func answer(
        _ plan: [ProbeWrite], with device: PeripheralProfile, pairsByItself: Bool = false
    ) throws -> [ProbeWrite] {
        var engine = try WriteRules(profile: device)
        var paired = false
        let guarded = Set(device.characteristics.filter { $0.effectiveSecurity[.write] != .none }.map(\.id))
        return plan.map { planned in
            var write = planned
            guard write.outcome == nil else { return write }
            if write.purpose == .guarded {
                let before = paired
                if !paired && guarded.contains(write.characteristic) {
                    guard pairsByItself else {
                        write.outcome = .refused(Self.clientError(.insufficientEncryption))
                        write.pairing = ProbePairingAround(before: false, after: false)
                        return write
                    }
                    paired = true
                }
                write.pairing = ProbePairingAround(before: before, after: paired)
            }
            switch engine.write(write.bytes, to: write.characteristic, at: .zero) {
            case .accept:
                write.outcome = .accepted
                if write.readsBack != nil {
                    write.readBack = .value(ProbeValue(bytes: engine.value(of: write.characteristic) ?? [], uuid: ""))
                }
            case .reject(let error):
                write.outcome = .refused(Self.clientError(error.deliveredThroughBlueZ(on: .write)))
            }
            return write
        }
    }

    /// The write checks of bundled profile `name` against a device running `device` (the profile itself unless
    /// given), on a link paired with a passkey.
    static func writeChecks(
        _ name: String, device: PeripheralProfile? = nil
    ) throws -> [Verification.Check] {
        let profile = try Fixtures.profile(name)
        var report = try Fixtures.report(name)
        report.writes = try answer(try plan(name, security: .authenticated), with: device ?? profile)
        return ProfileVerifier.verify(profile, against: report).checks.filter { $0.category == .write }
    }

    @Test(arguments: ProfileVerifierTests.profiles)
    func everyBundledProfilesWritesPassAgainstItsOwnRules(_ name: String) throws {
        let checks = try Self.writeChecks(name)
        let failed = checks.filter { $0.status == .fail }
        #expect(failed.isEmpty, "\(failed)")
        // Every writable characteristic that the device has is written a valid value.
        let profile = try Fixtures.profile(name)
        for characteristic in profile.characteristics where characteristic.properties.contains(.write) {
            let accepts = checks.first { $0.subject == characteristic.id && $0.check == "accepts" }
            #expect(accepts?.status == .pass, "\(name) \(characteristic.id): \(String(describing: accepts))")
        }
    }

    @Test func aWriteRuleAnsweringAnotherErrorIsOneFailure() throws {
        var firmware = try Fixtures.profile("heart-rate")
        firmware.behaviour.writeRules = [
            WriteRule(
                characteristicID: "heart-rate-control-point",
                actions: [.validate(.allowedValues([[0x01]]), error: ATTError(rawValue: 0x81)), .store])
        ]
        let failed = try Self.writeChecks("heart-rate", device: firmware).filter { $0.status == .fail }
        #expect(failed.map { "\($0.subject) \($0.check)" } == ["heart-rate-control-point refuses-allowed"])
        #expect(failed.first?.actual == "02 refused with 0x81 Application Error")
    }

    @Test func aDeviceThatTakesAnyValueFailsOnlyTheRefusal() throws {
        var firmware = try Fixtures.profile("thermostat")
        firmware.behaviour.writeRules.removeAll { $0.characteristicID == "set-point" }
        let failed = try Self.writeChecks("thermostat", device: firmware).filter { $0.status == .fail }
        #expect(failed.map { "\($0.subject) \($0.check)" } == ["set-point refuses-range"])
    }

    @Test func anErrorBlueZCannotCarryPassesAsTheUnlikelyErrorItArrivesAs() throws {
        var profile = try Fixtures.profile("heart-rate")
        profile.behaviour.writeRules = [
            WriteRule(
                characteristicID: "heart-rate-control-point",
                actions: [.validate(.allowedValues([[0x01]]), error: .valueNotAllowed), .store])
        ]
        var report = try Fixtures.report("heart-rate")
        report.writes = try Self.answer(
            WritePlan.writes(for: profile, seen: report, security: .none), with: profile)
        let refusal = ProfileVerifier.verify(profile, against: report).checks.first { $0.check == "refuses-allowed" }
        #expect(refusal?.status == .pass)
        #expect(refusal?.actual.contains("0x0E Unlikely Error, as a peripheral on bluetoothd delivers 0x13") == true)
    }

    @Test func aValueNotWrittenBackIsAFailureAndNamedAsLeftChanged() throws {
        let profile = try Fixtures.profile("thermostat")
        var report = try Fixtures.report("thermostat")
        var writes = try Self.answer(try Self.plan("thermostat", security: .authenticated), with: profile)
        let restore = try #require(writes.firstIndex { $0.characteristic == "set-point" && $0.purpose == .restores })
        writes[restore].outcome = .refused(Self.clientError(.unlikelyError))
        report.writes = writes
        let failed = Fixtures.failures(ProfileVerifier.verify(profile, against: report))
        #expect(failed == ["write set-point restored"])
        #expect(ProfileVerifier.leftWritten(writes) == ["set-point"])
        let restored = try Self.answer(try Self.plan("thermostat", security: .authenticated), with: profile)
        #expect(ProfileVerifier.leftWritten(restored).isEmpty)
    }

    @Test func aReportWithWritesRoundTripsThroughJSONAndOneWithoutHasNoKey() throws {
        var report = try Fixtures.report("heart-rate")
        let plain = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(!plain.contains("\"writes\""))
        report.writes = try Self.answer(try Self.plan("heart-rate"), with: try Fixtures.profile("heart-rate"))
        let decoded = try JSONDecoder().decode(ProbeReport.self, from: try JSONEncoder().encode(report))
        #expect(decoded == report)
    }
}
