import BlueZModel
import Foundation
import GATTModel
import GATTProfile
import Testing

@testable import ProbeCentral

/// `blemu verify`'s security checks: a read the profile guards, told from what a central on bluetoothd can see, on
/// the secure profile's real report (read over a link `blemu clone --pair --passkey` paired) and heart-rate's.
struct SecurityChecksTests {
    typealias Fixtures = ProfileVerifierTests

    /// The security checks of bundled profile `name` (or `profile`) against its 5.82 report, changed by `change`.
    static func checks(
        _ name: String, profile: PeripheralProfile? = nil, _ change: (inout ProbeReport) -> Void
    ) throws -> [String] {
        var report = try Fixtures.report(name)
        change(&report)
        let verification = ProfileVerifier.verify(try profile ?? Fixtures.profile(name), against: report)
        return verification.checks.filter { $0.category == .security }.map {
            "\($0.subject) \($0.check) \($0.status.rawValue)"
        }
    }

    /// Every guarded read of `report` answered with `read`.
    static func answer(_ report: inout ProbeReport, guarded: Set<String>, with read: ProbeRead) {
        for s in report.services.indices {
            for c in report.services[s].characteristics.indices
            where guarded.contains(report.services[s].characteristics[c].uuid) {
                report.services[s].characteristics[c].read = read
            }
        }
    }

    /// The secure profile's guarded reads: the email address (read-encryption-required) and the status (`encryption:
    /// read: encrypted`), by the UUIDs its device shows.
    static let secureGuarded: Set<String> = ["2A87", "5A1C0B7E-3D2F-4E61-9C8B-7A6D5E4F3A2B"]
    static let notPaired = ProbeRead.failure(ProbeFailure(name: BlueZName.Error.notPermitted, message: "Not paired"))

    @Test func guardedReadsOnTheLinkPairWithPairPass() throws {
        let found = try Self.checks("secure") {
            $0.pairing = ProbePairing(requested: true, before: false, afterReads: true)
        }
        #expect(found == ["email-address read pass", "status read pass"])
    }

    @Test func guardedReadsRefusedForWantOfPairingPassAndOpenOnesFail() throws {
        let refused = try Self.checks("secure") { report in
            report.pairing = ProbePairing(requested: false, before: false, afterReads: false)
            Self.answer(&report, guarded: Self.secureGuarded, with: Self.notPaired)
        }
        #expect(refused == ["email-address read pass", "status read pass"])
        // The values as the paired link read them, on a link that never paired: the device left them open.
        let open = try Self.checks("secure") {
            $0.pairing = ProbePairing(requested: false, before: false, afterReads: false)
        }
        #expect(open == ["email-address read fail", "status read fail"])
    }

    @Test func whatCannotBeToldIsSkippedSayingWhy() throws {
        // bluetoothd paired by itself, or a bond was there before: a value read then proves nothing.
        for pairing in [
            ProbePairing(requested: false, before: false, afterReads: true),
            ProbePairing(requested: false, before: true, afterReads: true),
        ] {
            #expect(
                try Self.checks("secure") { $0.pairing = pairing } == ["email-address read skip", "status read skip"])
        }
        // A report from before pairing was recorded.
        #expect(try Self.checks("secure") { $0.pairing = nil } == ["email-address read skip", "status read skip"])
        // No reply is not a refusal for want of pairing (the lab's unpaired probe of this profile met one).
        let noReply = ProbeRead.failure(ProbeFailure(name: "org.freedesktop.DBus.Error.NoReply", message: "no reply"))
        let found = try Self.checks("secure") { report in
            report.pairing = ProbePairing(requested: false, before: false, afterReads: false)
            Self.answer(&report, guarded: Self.secureGuarded, with: noReply)
        }
        #expect(found == ["email-address read skip", "status read skip"])
    }

    @Test func aRefusalAfterPairingFailsAsAsksMoreThanThePairingGave() throws {
        let found = try Self.checks("secure") { report in
            report.pairing = ProbePairing(requested: true, before: false, afterReads: true)
            Self.answer(&report, guarded: ["5A1C0B7E-3D2F-4E61-9C8B-7A6D5E4F3A2B"], with: Self.notPaired)
        }
        #expect(found == ["email-address read pass", "status read fail"])
    }

    @Test func anEncryptedReadLeftOpenIsTheOneFailure() throws {
        // The profile guards the body sensor location; the heart-rate device reads it on a link that never paired.
        var profile = try Fixtures.profile("heart-rate")
        let s = try #require(profile.services.firstIndex { $0.id == "heart-rate" })
        let c = try #require(profile.services[s].characteristics.firstIndex { $0.id == "body-sensor-location" })
        profile.services[s].characteristics[c].security.require(.encrypted, for: .read)
        var report = try Fixtures.report("heart-rate")
        report.pairing = ProbePairing(requested: false, before: false, afterReads: false)
        let verification = ProfileVerifier.verify(profile, against: report)
        #expect(Fixtures.failures(verification) == ["security body-sensor-location read"])
        #expect(Fixtures.failures(ProfileVerifier.verify(try Fixtures.profile("heart-rate"), against: report)).isEmpty)
    }
}
