import BlueZModel
import Foundation
import GATTModel
import GATTProfile
import Testing

@testable import ProbeCentral

/// `blemu verify`'s security checks: a read or a subscription the profile guards, told from what a central on
/// bluetoothd can see, on the secure profile's real report (read over a link `blemu clone --pair --passkey` paired)
/// and heart-rate's.
struct SecurityChecksTests {
    typealias Fixtures = ProfileVerifierTests

    /// The security checks `kind` ("read" or "subscribe") of bundled profile `name` (or `profile`) against its 5.82
    /// report, changed by `change`.
    static func checks(
        _ name: String, profile: PeripheralProfile? = nil, kind: String = "read", _ change: (inout ProbeReport) -> Void
    ) throws -> [String] {
        var report = try Fixtures.report(name)
        change(&report)
        let verification = ProfileVerifier.verify(try profile ?? Fixtures.profile(name), against: report)
        return verification.checks.filter { $0.category == .security && $0.check == kind }.map {
            "\($0.subject) \($0.check) \($0.status.rawValue)"
        }
    }

    /// Each characteristic of `report` that `matches`, changed by `change`.
    static func change(
        _ report: inout ProbeReport, where matches: (ProbeCharacteristic) -> Bool,
        _ change: (inout ProbeCharacteristic) -> Void
    ) {
        for s in report.services.indices {
            for c in report.services[s].characteristics.indices where matches(report.services[s].characteristics[c]) {
                change(&report.services[s].characteristics[c])
            }
        }
    }

    /// Every guarded read of `report` answered with `read`.
    static func answer(_ report: inout ProbeReport, guarded: Set<String>, with read: ProbeRead) {
        change(&report, where: { guarded.contains($0.uuid) }) { $0.read = read }
    }

    /// Bundled heart-rate, with `operation` on characteristic `id` guarded (encrypted) where its device leaves it open.
    static func heartRate(guarding id: String, for operation: AttributeOperation) throws -> PeripheralProfile {
        try heartRate(id) { $0.security.require(.encrypted, for: operation) }
    }

    /// Bundled heart-rate, with characteristic `id` of its heart-rate service changed by `change`.
    static func heartRate(_ id: String, _ change: (inout Characteristic) -> Void) throws -> PeripheralProfile {
        var profile = try Fixtures.profile("heart-rate")
        let s = try #require(profile.services.firstIndex { $0.id == "heart-rate" })
        let c = try #require(profile.services[s].characteristics.firstIndex { $0.id == id })
        change(&profile.services[s].characteristics[c])
        return profile
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
        let profile = try Self.heartRate(guarding: "body-sensor-location", for: .read)
        var report = try Fixtures.report("heart-rate")
        report.pairing = ProbePairing(requested: false, before: false, afterReads: false)
        let verification = ProfileVerifier.verify(profile, against: report)
        #expect(Fixtures.failures(verification) == ["security body-sensor-location read"])
        #expect(Fixtures.failures(ProfileVerifier.verify(try Fixtures.profile("heart-rate"), against: report)).isEmpty)
    }

    /// The secure profile's email address, whose notifications it guards (notify-encryption-required), subscribed
    /// as `change` says, on a link that was never paired unless `requested`.
    static func subscription(
        requested: Bool = false, _ change: (inout ProbeCharacteristic) -> Void
    ) throws -> [String] {
        try Self.checks("secure", kind: "subscribe") { report in
            report.pairing = ProbePairing(requested: requested, before: false, afterReads: requested)
            Self.change(&report, where: { $0.uuid == "2A87" }, change)
        }
    }

    static let neverPaired = ProbePairingAround(before: false, after: false)

    @Test func aGuardedSubscriptionRefusedForWantOfPairingPassesAndAnOpenOneFails() throws {
        // bluetoothd's client paired by itself during StartNotify: the device refused the CCCD write unpaired.
        #expect(
            try Self.subscription { $0.subscribePairing = .init(before: false, after: true) } == [
                "email-address subscribe pass"
            ])
        // Pairing could not be done (no agent to type the passkey): the refusal reaches the central.
        #expect(
            try Self.subscription {
                $0.subscribePairing = Self.neverPaired
                $0.subscribeError = Self.notPaired.failure
            } == ["email-address subscribe pass"])
        // Subscribed while the link stayed unpaired: the device left its updates open.
        #expect(try Self.subscription { $0.subscribePairing = Self.neverPaired } == ["email-address subscribe fail"])
        // On the link --pair paired: subscribed passes, refused fails (the device asks for more than it got).
        #expect(try Self.subscription(requested: true) { _ in } == ["email-address subscribe pass"])
        #expect(
            try Self.subscription(requested: true) { $0.subscribeError = Self.notPaired.failure } == [
                "email-address subscribe fail"
            ])
    }

    @Test func aSubscriptionThatCannotBeToldIsSkipped() throws {
        // Paired before StartNotify (by bluetoothd for a guarded read, or a bond), or not recorded.
        #expect(
            try Self.subscription { $0.subscribePairing = .init(before: true, after: true) } == [
                "email-address subscribe skip"
            ])
        #expect(try Self.subscription { $0.subscribePairing = nil } == ["email-address subscribe skip"])
        #expect(try Self.checks("secure", kind: "subscribe") { $0.pairing = nil } == ["email-address subscribe skip"])
        // Refused for want of pairing on a link bluetoothd had paired by itself: more than that pairing, which the
        // profile may or may not ask.
        #expect(
            try Self.subscription {
                $0.subscribePairing = .init(before: true, after: true)
                $0.subscribeError = Self.notPaired.failure
            } == ["email-address subscribe skip"])
        // An error that is not a refusal for want of pairing.
        #expect(
            try Self.subscription {
                $0.subscribePairing = Self.neverPaired
                $0.subscribeError = ProbeFailure(name: BlueZName.Error.failed, message: "Operation failed")
            } == ["email-address subscribe skip"])
    }

    @Test func anEncryptedSubscriptionLeftOpenIsTheOneFailure() throws {
        // The profile guards the heart-rate measurement's notifications; the device takes the subscription on a link
        // that never paired. Nothing else about the device is wrong.
        let profile = try Self.heartRate(guarding: "heart-rate-measurement", for: .notify)
        var report = try Fixtures.report("heart-rate")
        report.pairing = ProbePairing(requested: false, before: false, afterReads: false)
        Self.change(&report, where: \.canSubscribe) { $0.subscribePairing = Self.neverPaired }
        let verification = ProfileVerifier.verify(profile, against: report)
        #expect(Fixtures.failures(verification) == ["security heart-rate-measurement subscribe"])
        // Core Bluetooth's notify-encryption-required alone both notifies and guards it: the same one failure.
        let encryptedOnly = try Self.heartRate("heart-rate-measurement") { $0.properties = [.notifyEncryptionRequired] }
        #expect(
            Fixtures.failures(ProfileVerifier.verify(encryptedOnly, against: report)) == [
                "security heart-rate-measurement subscribe"
            ])
        #expect(Fixtures.failures(ProfileVerifier.verify(try Fixtures.profile("heart-rate"), against: report)).isEmpty)
    }
}
