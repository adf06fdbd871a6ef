import Foundation
import GATTModel
import GATTProfile
import Testing

@testable import ProbeCentral

#if canImport(FoundationXML)
import FoundationXML
#endif

/// `blemu verify`'s checks, on probe reports a real central made: `blemu probe --json` of every bundled profile
/// served by `blemu run` on real bluetoothd (the clone scenario's `NAME.original.json`, kept under Fixtures/ for
/// BlueZ 5.66, 5.82 and 5.87). Each profile verifies clean against its own device, and each defect planted in what
/// the device showed is found as exactly one failure.
struct ProfileVerifierTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let versions = ["5.66", "5.82", "5.87"]
    static let profiles = [
        "battery", "cycling-speed-cadence", "device-information", "health-thermometer", "heart-rate", "secure",
        "thermostat", "transfer",
    ]

    static func profile(_ name: String) throws -> PeripheralProfile {
        let path = ProfileCloneTests.root.appendingPathComponent("profiles/\(name).yaml").path
        let result = ProfileLoader.load(path: path)
        return try #require(result.profile, "\(result.diagnostics.map(\.positionedMessage))")
    }

    static func report(_ name: String, bluez version: String = "5.82") throws -> ProbeReport {
        let url = fixtures.appendingPathComponent("\(version)/\(name).json")
        return try JSONDecoder().decode(ProbeReport.self, from: Data(contentsOf: url))
    }

    /// The failed checks, as `category subject check`.
    static func failures(_ verification: Verification) -> [String] {
        verification.checks.filter { $0.status == .fail }.map { "\($0.category.rawValue) \($0.subject) \($0.check)" }
    }

    @Test(arguments: versions) func everyBundledProfileVerifiesCleanAgainstItsOwnDevice(bluez version: String) throws {
        for name in Self.profiles {
            let verification = ProfileVerifier.verify(
                try Self.profile(name), against: try Self.report(name, bluez: version))
            #expect(verification.conforms, "\(name) on \(version):\n\(verification.text)")
            // Something was checked in every category a central can see.
            let categories = Set(verification.checks.filter { $0.status == .pass }.map(\.category))
            #expect(categories.isSuperset(of: [.advertisement, .gatt]), "\(name): \(categories)")
        }
    }

    /// The GAP Device Name is checked where the central's bluetoothd shows the GAP service (5.80 on) and skipped,
    /// saying why, where it keeps it to its plugins.
    @Test(arguments: versions) func theGAPNameIsCheckedWhereTheCentralCanReadIt(bluez version: String) throws {
        let verification = ProfileVerifier.verify(
            try Self.profile("heart-rate"), against: try Self.report("heart-rate", bluez: version))
        let gap = verification.checks.filter { $0.subject == "gap" && $0.check == "device-name" }
        #expect(gap.count == 1)
        #expect(gap.first?.status == (version == "5.66" ? .skip : .pass), "\(gap)")
    }

    @Test func everyCharacteristicAndDeclaredDescriptorIsCheckedOnce() throws {
        let profile = try Self.profile("heart-rate")
        let verification = ProfileVerifier.verify(profile, against: try Self.report("heart-rate"))
        for characteristic in profile.characteristics {
            let properties = verification.checks.filter { $0.subject == characteristic.id && $0.check == "properties" }
            #expect(properties.count == 1, "\(characteristic.id)")
        }
        // The constant body sensor location is compared byte for byte.
        let location = verification.checks.first { $0.subject == "body-sensor-location" && $0.check == "value" }
        #expect(location?.status == .pass)
    }

    /// A report of heart-rate with one thing changed, as a device with that defect would show it.
    static func heartRate(_ change: (inout ProbeReport) -> Void) throws -> [String] {
        var report = try Self.report("heart-rate")
        change(&report)
        return failures(ProfileVerifier.verify(try Self.profile("heart-rate"), against: report))
    }

    /// Where a characteristic of `uuid` sits in `report`.
    static func locate(_ uuid: String, in report: ProbeReport) -> (service: Int, characteristic: Int)? {
        for (s, service) in report.services.enumerated() {
            if let c = service.characteristics.firstIndex(where: { $0.uuid == uuid }) { return (s, c) }
        }
        return nil
    }

    @Test func aPropertyTooManyIsOneFailure() throws {
        let found = try Self.heartRate { report in
            guard let (s, c) = Self.locate("2A38", in: report) else { return }
            report.services[s].characteristics[c].flags.append("write")
        }
        #expect(found == ["gatt body-sensor-location properties"])
    }

    @Test func aMissingCharacteristicIsOneFailure() throws {
        let found = try Self.heartRate { report in
            guard let (s, c) = Self.locate("2A39", in: report) else { return }
            report.services[s].characteristics.remove(at: c)
        }
        #expect(found == ["gatt heart-rate-control-point present"])
    }

    @Test func aWrongConstantIsOneFailure() throws {
        let found = try Self.heartRate { report in
            guard let (s, c) = Self.locate("2A38", in: report) else { return }
            report.services[s].characteristics[c].read = .value(ProbeValue(bytes: [0x07], uuid: "2A38"))
        }
        #expect(found == ["value body-sensor-location value"])
    }

    /// A long constant (the manufacturer name, 40 bytes where a read response at the smallest ATT_MTU carries 22):
    /// read whole it passes; read short, or refused with an error only a Read Blob Request gets, it is the one
    /// failure, saying the device does not read it whole.
    @Test func aLongValueMustBeReadWhole() throws {
        let long = Array("Polar Electro Oy, Kempele, Finland 90440".utf8)
        #expect(long.count == 40)
        var profile = try Self.profile("heart-rate")
        let s = try #require(profile.services.firstIndex { $0.id == "device-information" })
        let c = try #require(profile.services[s].characteristics.firstIndex { $0.id == "manufacturer-name" })
        profile.services[s].characteristics[c].value = .cached(long)
        func check(_ read: ProbeRead) throws -> (failures: [String], actual: String?) {
            var report = try Self.report("heart-rate")
            let (rs, rc) = try #require(Self.locate("2A29", in: report))
            report.services[rs].characteristics[rc].read = read
            let verification = ProfileVerifier.verify(profile, against: report)
            let check = verification.checks.first { $0.subject == "manufacturer-name" && $0.check == "value" }
            #expect(check?.expected.hasSuffix("(40 bytes, read whole)") == true, "\(String(describing: check))")
            return (Self.failures(verification), check?.actual)
        }
        #expect(try check(.value(ProbeValue(bytes: long, uuid: "2A29"))).failures.isEmpty)
        // Cut where a device that answers the first Read Request and ends the value there (an empty Read Blob
        // Response, or none asked for as it filled fewer than ATT_MTU − 1 bytes) leaves a central on bluetoothd.
        let short = try check(.value(ProbeValue(bytes: Array(long.prefix(22)), uuid: "2A29")))
        #expect(short.failures == ["value manufacturer-name value"])
        #expect(
            short.actual?.hasSuffix("(the first 22 of its 40 bytes: the read of a long value stopped short)") == true)
        for (name, message) in [
            ("org.bluez.Error.InvalidArguments", "Invalid offset"),
            ("org.bluez.Error.Failed", "Operation failed with ATT error: 0x0b"),
        ] {
            let refused = try check(.failure(ProbeFailure(name: name, message: message)))
            #expect(refused.failures == ["value manufacturer-name value"])
            #expect(refused.actual?.contains("only a Read Blob Request gets") == true, "\(refused)")
        }
        // Another wrong value of that length is only wrong, not cut.
        let other = try check(.value(ProbeValue(bytes: Array(long.reversed().prefix(22)), uuid: "2A29")))
        #expect(other.failures == ["value manufacturer-name value"])
        #expect(other.actual?.contains("stopped short") == false)
    }

    @Test func aNameThatDiffersIsOneFailureAndAShortenedOneIsNot() throws {
        #expect(try Self.heartRate { $0.device.name = "Polar H9" } == ["advertisement local-name value"])
        #expect(try Self.heartRate { $0.device.name = "Polar H10" }.isEmpty)
    }

    @Test func aMissingAdvertisedServiceAndAnExtraOneAreOneFailureEach() throws {
        #expect(
            try Self.heartRate { $0.device.uuids.removeAll { $0 == "180D" } }
                == ["advertisement service-uuids/180D advertised"])
        #expect(
            try Self.heartRate { $0.device.uuids.append("FEE0") } == ["advertisement service-uuids/FEE0 undeclared"])
        // A device bluetoothd connected before lists the services it resolved, GAP too (5.66 exports no object for
        // GAP, so only its UUID says so): not advertised by the device, so not its finding.
        #expect(try Self.heartRate { $0.device.uuids += ["1800", "1801", "180A"] }.isEmpty)
    }

    @Test func notificationsAtTheScheduledPacePassAndTooSlowOnesAreOneFailure() throws {
        let profile = try Self.profile("heart-rate")
        let report = try Self.report("heart-rate")
        let pace = ProfileVerifier.verify(profile, against: report).checks.filter { $0.category == .notification }
        #expect(
            pace.map { "\($0.subject) \($0.check) \($0.status)" } == [
                "heart-rate-measurement pace pass", "heart-rate-measurement fields pass",
                "heart-rate-measurement range pass", "battery-level pace skip",
            ], "\(pace)")
        // The same values, one every two seconds.
        #expect(
            try Self.heartRate { report in
                guard let (s, c) = Self.locate("2A37", in: report) else { return }
                for n in report.services[s].characteristics[c].notifications.indices {
                    report.services[s].characteristics[c].notifications[n].at? *= 2
                }
                report.listenSeconds *= 2
            } == ["notification heart-rate-measurement pace"])
        // None at all, or a value the fields cannot hold.
        #expect(
            try Self.heartRate { report in
                guard let (s, c) = Self.locate("2A37", in: report) else { return }
                report.services[s].characteristics[c].notifications = []
            } == ["notification heart-rate-measurement pace"])
        #expect(
            try Self.heartRate { report in
                guard let (s, c) = Self.locate("2A37", in: report) else { return }
                report.services[s].characteristics[c].notifications[0] = ProbeValue(bytes: [], uuid: "2A37", at: 1)
            } == ["notification heart-rate-measurement fields"])
        // A report of a central that did not listen says nothing of the pace.
        var quiet = report
        quiet.listenSeconds = 0
        #expect(!ProfileVerifier.verify(profile, against: quiet).checks.contains { $0.category == .notification })
    }

    @Test func aShortWindowOrAGuardedSubscriptionIsASkipAndAnOpenOneRefusedAFailure() throws {
        var profile = try Self.profile("heart-rate")
        var report = try Self.report("heart-rate")
        // Under three intervals of 1 s a schedule that starts on the subscription may show one value only.
        report.listenSeconds = 2.5
        let short = ProfileVerifier.verify(profile, against: report).checks.first {
            $0.subject == "heart-rate-measurement" && $0.check == "pace"
        }
        #expect(short?.status == .skip, "\(String(describing: short))")
        // A subscription refused: the device's defect when the profile leaves it open, a skip when it guards it.
        report = try Self.report("heart-rate")
        let (s, c) = try #require(Self.locate("2A37", in: report))
        report.services[s].characteristics[c].notifications = []
        report.services[s].characteristics[c].subscribeError = ProbeFailure(
            name: "org.bluez.Error.NotPermitted", message: "Insufficient Encryption")
        #expect(
            Self.failures(ProfileVerifier.verify(profile, against: report)) == [
                "notification heart-rate-measurement pace"
            ])
        let (ps, pc) = try #require(
            profile.services.indices.lazy.compactMap { s in
                profile.services[s].characteristics.firstIndex { $0.id == "heart-rate-measurement" }.map { (s, $0) }
            }.first)
        profile.services[ps].characteristics[pc].properties.insert(.notifyEncryptionRequired)
        let guarded = ProfileVerifier.verify(profile, against: report)
        #expect(guarded.conforms, "\(guarded.text)")
        #expect(guarded.checks.contains { $0.subject == "heart-rate-measurement" && $0.status == .skip })
    }

    @Test func anInitialValueAWriteRuleChangesIsNotHeldToItsBytes() throws {
        var profile = try Self.profile("secure")
        var report = try Self.report("secure")
        let (s, c) = try #require(Self.locate("2A87", in: report))
        report.services[s].characteristics[c].read = .value(
            ProbeValue(bytes: Array("ada@lovelace.org".utf8), uuid: "2A87"))
        // Nothing changes the email address: a different one is the device's defect.
        #expect(Self.failures(ProfileVerifier.verify(profile, against: report)) == ["value email-address value"])
        // Once a write to the status sets it, the address may be anything.
        profile.behaviour.writeRules.append(
            WriteRule(
                characteristicID: "status",
                actions: [.set(characteristicID: "email-address", field: nil, ratePerSecond: nil)]))
        #expect(Self.failures(ProfileVerifier.verify(profile, against: report)).isEmpty)
    }

    @Test func valuesOutsideWhatTheBehaviourProducesAreOneFailure() throws {
        // bpm wanders within 55...110 (a random walk); a notified 150 is not what the profile allows.
        #expect(
            try Self.heartRate { report in
                guard let (s, c) = Self.locate("2A37", in: report) else { return }
                report.services[s].characteristics[c].notifications[1] = ProbeValue(
                    bytes: [0x06, 150], uuid: "2A37", at: report.services[s].characteristics[c].notifications[1].at)
            } == ["notification heart-rate-measurement range"])
        // Thermostat: humidity follows a sine of 4500 +- 800, and the set point is what its rule validates (5.00 to
        // 30.00 °C) before storing it; the temperature, which a written set point moves (a write rule's `set`), and
        // the mode (allowed values, not a range) have no range to hold them to.
        let profile = try Self.profile("thermostat")
        var report = try Self.report("thermostat")
        let clean = ProfileVerifier.verify(profile, against: report).checks.filter { $0.check == "range" }
        #expect(clean.map(\.subject) == ["humidity", "set-point"], "\(clean)")
        #expect(clean.allSatisfy { $0.status == .pass })
        var hot = report
        let (p, q) = try #require(Self.locate("8D3A0002-6B1E-4C2F-9A57-3E2C1D0B4F61", in: hot))
        hot.services[p].characteristics[q].read = .value(
            ProbeValue(bytes: [0xA0, 0x0F], uuid: "8D3A0002-6B1E-4C2F-9A57-3E2C1D0B4F61"))  // 40.00 °C
        #expect(Self.failures(ProfileVerifier.verify(profile, against: hot)) == ["value set-point range"])
        let (s, c) = try #require(Self.locate("2A6F", in: report))
        report.services[s].characteristics[c].read = .value(ProbeValue(bytes: [0x70, 0x17], uuid: "2A6F"))  // 60.00 %
        #expect(Self.failures(ProfileVerifier.verify(profile, against: report)) == ["value humidity range"])
        // A write rule that replaces the humidity whole (a `set` without a field) takes its range away too, and one
        // that sets the set point from another write takes the set point's.
        var rewritten = profile
        rewritten.behaviour.writeRules.append(
            WriteRule(
                characteristicID: "mode",
                actions: [
                    .set(characteristicID: "humidity", field: nil, ratePerSecond: nil),
                    .set(characteristicID: "set-point", field: "centidegrees", ratePerSecond: nil),
                ]))
        #expect(!ProfileVerifier.verify(rewritten, against: report).checks.contains { $0.check == "range" })
    }

    @Test func anUndeclaredCharacteristicAndService() throws {
        let found = try Self.heartRate { report in
            guard let (s, _) = Self.locate("2A37", in: report) else { return }
            report.services[s].characteristics.append(
                ProbeCharacteristic(
                    uuid: "FFF1", name: nil, flags: ["read"], path: "/x", read: nil, notifications: [],
                    descriptors: []))
            report.services.append(
                ProbeService(uuid: "FFF0", name: nil, isPrimary: true, path: "/y", characteristics: []))
        }
        #expect(found == ["gatt FFF1 undeclared", "gatt FFF0 undeclared"])
    }

    @Test func wrongManufacturerDataAndAppearance() throws {
        #expect(
            try Self.heartRate { $0.device.manufacturerData = ["006B": "0300"] }
                == ["advertisement manufacturer-data/0x006B value"])
        #expect(try Self.heartRate { $0.device.appearance = 0x0340 } == ["advertisement appearance value"])
    }

    /// A read refused with Insufficient Encryption (0x0F), as the probe reports it.
    static let insufficientEncryption: ProbeFailure = {
        var failure = ProbeFailure(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0f")
        failure.attError = 0x0F
        return failure
    }()

    @Test func aReadTheProfileGuardsIsSkippedWhenRefusedAndFailedWhenItShouldNotBe() throws {
        let profile = try Self.profile("secure")
        let guarded = try #require(profile.characteristics.first { $0.effectiveSecurity[.read] != .none })
        var report = try Self.report("secure")
        let (s, c) = try #require(Self.locate(guarded.uuid.description, in: report))
        report.services[s].characteristics[c].read = .failure(Self.insufficientEncryption)
        let verification = ProfileVerifier.verify(profile, against: report)
        #expect(verification.conforms, "\(verification.text)")
        #expect(verification.checks.contains { $0.subject == guarded.id && $0.status == .skip })

        // The same refusal of a read the profile leaves open is the device's defect.
        let open = try #require(
            profile.characteristics.first {
                $0.effectiveSecurity[.read] == .none && $0.value.isCached && $0.properties.contains(.read)
            })
        let (os, oc) = try #require(Self.locate(open.uuid.description, in: report))
        report.services[os].characteristics[oc].read = .failure(Self.insufficientEncryption)
        #expect(Self.failures(ProfileVerifier.verify(profile, against: report)) == ["value \(open.id) value"])
    }

    @Test func theReportsSayWhatWasChecked() throws {
        var report = try Self.report("heart-rate")
        report.device.name = "Polar <H9> & co\u{01}"
        let verification = ProfileVerifier.verify(try Self.profile("heart-rate"), against: report)
        #expect(verification.text.contains("FAIL  advertisement local-name value"))
        #expect(verification.text.hasSuffix("1 failed, \(verification.count(.skip)) skipped\n"))
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(verification.json.utf8)) as? [String: Any])
        #expect(json["failed"] as? Int == 1)
        #expect(json["conforms"] as? Bool == false)
        let checks = try #require(json["checks"] as? [[String: Any]])
        #expect(checks.count == verification.checks.count)
        #expect(Set(checks.flatMap(\.keys)) == ["category", "subject", "check", "status", "expected", "actual"])
        // JUnit: one test case per check, the failure's message escaped.
        let junit = verification.junit
        #expect(junit.components(separatedBy: "<testcase ").count - 1 == verification.checks.count)
        #expect(junit.contains("&quot;Polar &lt;H9&gt; &amp; co\\u0001&quot;"))
        #expect(try XMLDocument(xmlString: junit).rootElement()?.name == "testsuites")
        // A control character (a device may name itself with any byte) cannot be in XML 1.0 at all.
        #expect(Verification.escaped("a\u{01}b<'") == "a\u{FFFD}b&lt;&apos;")
    }
}
