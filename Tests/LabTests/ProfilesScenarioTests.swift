import BlueZModel
import Foundation
import ProbeCentral
import Testing

@testable import Lab

/// Every bundled profile served by the real `blemu run` on hci0 and checked from hci1 and hci2
/// (`ProfilesScenario`: one boot, one guest script, assertions on its files). What to expect comes from the host's
/// `blemu show --json` and `blemu adv --json`, plus what bluetoothd 5.66 adds (`bluetoothdServices`).
@Suite(
    .needsLab, .needsBlemuRun,
    .labSuiteTimeLimit)
struct ProfilesScenarioTests {
    /// A service as a central sees it: UUID, then each characteristic's UUID, flags and descriptor UUIDs.
    struct SeenService: Equatable, CustomStringConvertible {
        var uuid: String
        var characteristics: [SeenCharacteristic]
        var description: String { "\(uuid) \(characteristics)" }
    }

    /// A characteristic as a central sees it; flags as a set, since bluetoothd lists them in its own order.
    struct SeenCharacteristic: Equatable, CustomStringConvertible {
        var uuid: String
        var flags: Set<String>
        var descriptors: [String]
        var description: String { "\(uuid) \(flags.sorted()) \(descriptors)" }
    }

    /// What bluetoothd itself publishes in front of every application (src/gatt-database.c):
    /// `populate_gatt_service` (0x1801: Service Changed with its CCC, Client Supported Features, Database Hash);
    /// not `populate_devinfo_service` (0x180A with the PnP ID): the lab sets `DeviceID = false`, so a profile's
    /// 0x180A is the only one (else a central sees two). Its GAP service
    /// (0x1800: Device Name, Appearance) is there too, but a 5.66 central does not export it: the gap plugin is an
    /// internal profile, and those claim their services (src/device.c `add_gatt_service`). From 5.80 the central
    /// exports claimed services read-only (main.conf `[GATT] ExportClaimedServices`, commit dbd6591bd), so 0x1800
    /// shows first.
    static func bluetoothdServices(_ system: LabSystem) -> [SeenService] {
        let gap = SeenService(
            uuid: "1800",
            characteristics: [
                SeenCharacteristic(uuid: "2A00", flags: ["read"], descriptors: []),
                SeenCharacteristic(uuid: "2A01", flags: ["read"], descriptors: []),
            ])
        return (system.bluez.isAtLeast("5.80") ? [gap] : []) + bluetoothdServices
    }

    /// The services every version shows; `bluetoothdServices(_:)` adds what depends on the version.
    static let bluetoothdServices = [
        SeenService(
            uuid: "1801",
            characteristics: [
                SeenCharacteristic(uuid: "2A05", flags: ["indicate"], descriptors: ["2902"]),
                SeenCharacteristic(uuid: "2B29", flags: ["read", "write"], descriptors: []),
                SeenCharacteristic(uuid: "2B2A", flags: ["read"], descriptors: []),
            ])
    ]

    private func trimmed(_ run: LabRun, _ name: String) -> String {
        read(run, name).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The run, checked to have told `story` to its end: a failed step names itself in the message.
    private func finished(_ story: String, _ system: LabSystem) async throws -> LabRun {
        let run = try await ProfilesScenario.shared.run(on: system)
        try #require(
            trimmed(run, "\(story).rc") == "0",
            """
            story \(story) failed: \(read(run, "\(story).failure"))
            \(tails(run, ["scenario-steps", "command.log"]))
            """)
        return run
    }

    /// The host's `blemu show --json` of a profile, as the central should see it.
    private func declared(_ profile: ProfilesScenario.Profile) throws -> [SeenService] {
        let data = LabScenario.blemu(["show", "--json", profile.path])
        let shown = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let services = try #require(shown["services"] as? [[String: Any]])
        return services.map { service in
            let characteristics = (service["characteristics"] as? [[String: Any]] ?? []).map { characteristic in
                let bluezFlags = characteristic["bluezFlags"] as? [String] ?? []
                let flags = Self.centralFlags(bluezFlags)
                // bluetoothd adds the CCC (2902) right after the declaration of whatever notifies or indicates,
                // and the Extended Properties (2900) where those are set; the profile's own descriptors follow.
                var descriptors: [String] = []
                if !flags.isDisjoint(with: ["notify", "indicate"]) { descriptors.append("2902") }
                if flags.contains("extended-properties") { descriptors.append("2900") }
                descriptors += (characteristic["descriptors"] as? [[String: Any]] ?? []).compactMap {
                    $0["uuid"] as? String
                }
                return SeenCharacteristic(
                    uuid: characteristic["uuid"] as? String ?? "?", flags: flags, descriptors: descriptors)
            }
            return SeenService(uuid: service["uuid"] as? String ?? "?", characteristics: characteristics)
        }
    }

    /// The flags a remote central reads from a characteristic declaration that bluetoothd built from `bluezFlags`:
    /// the security variants become their base property (the declaration has no security bits), `authorize`
    /// disappears, and reliable-write or writable-auxiliaries bring extended-properties.
    static func centralFlags(_ bluezFlags: [String]) -> Set<String> {
        var flags = Set<String>()
        for flag in bluezFlags where flag != "authorize" {
            var base = flag
            for prefix in ["encrypt-authenticated-", "encrypt-", "secure-"] where base.hasPrefix(prefix) {
                base = String(base.dropFirst(prefix.count))
                break
            }
            flags.insert(base)
        }
        if !flags.isDisjoint(with: ["reliable-write", "writable-auxiliaries"]) { flags.insert("extended-properties") }
        return flags
    }

    private func report(_ run: LabRun, _ profile: ProfilesScenario.Profile) throws -> ProbeReport {
        #expect(
            trimmed(run, "\(profile.name)-probe-rc") == "0",
            "\(tails(run, ["\(profile.name)-probe.err", "\(profile.name)-run.log"]))")
        return try JSONDecoder().decode(ProbeReport.self, from: Data(read(run, "\(profile.name)-probe.json").utf8))
    }

    /// The profiles by name, for parameterised tests.
    static let profileNames = ProfilesScenario.profiles.map(\.name)

    @Test func everyBundledProfileIsInTheStory() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: LabScenario.package + "/profiles")
            .filter { $0.hasSuffix(".yaml") }
        let bundled = ProfilesScenario.profiles.filter(\.isBundled).map { $0.name + ".yaml" }
        #expect(Set(bundled) == Set(files), "blemu adv --json failed for some")
    }

    /// The profile of a story and what `blemu adv --json` predicts for it, run on the host.
    private func profileAndPlan(_ name: String) throws -> (ProfilesScenario.Profile, [String: Any]) {
        let profile = try #require(ProfilesScenario.profiles.first { $0.name == name })
        let plan = try #require(
            try JSONSerialization.jsonObject(with: LabScenario.blemu(["adv", "--json", profile.path]))
                as? [String: Any])
        return (profile, plan)
    }

    @Test(arguments: LabScenario.boundingSystems, profileNames)
    func theScanSeesTheAdvertisedNameAndExactlyTheAdvertisedUUIDs(
        system: LabSystem, _ name: String
    ) async throws {
        let run = try await finished("profile-" + name, system)
        let (profile, plan) = try profileAndPlan(name)
        let device = try report(run, profile).device
        // The bytes on air are blemu adv's (theAdvertisingBytesAreThoseBlemuAdvPredicts); from 5.84 the central's
        // bluetoothd strips spaces around every name it receives (src/eir.c name2utf8, 218db700f), so a name cut
        // after a space reads without it there.
        let advertised = plan["localName"] as? String
        #expect(
            device.name
                == (system.bluez.isAtLeast("5.84")
                    ? advertised?.trimmingCharacters(in: .whitespaces) : advertised))
        #expect(Set(device.uuids) == Set(plan["advertised"] as? [String] ?? []), "\(device.uuids)")
    }

    @Test(arguments: LabScenario.boundingSystems, profileNames)
    func theCentralSeesExactlyTheDeclaredTreeAfterBluetoothdsOwnServices(
        system: LabSystem, _ name: String
    ) async throws {
        let run = try await finished("profile-" + name, system)
        let profile = try #require(ProfilesScenario.profiles.first { $0.name == name })
        let seen = try report(run, profile).services.map { service in
            SeenService(
                uuid: service.uuid,
                characteristics: service.characteristics.map {
                    SeenCharacteristic(uuid: $0.uuid, flags: Set($0.flags), descriptors: $0.descriptors.map(\.uuid))
                })
        }
        let expected = Self.bluetoothdServices(system) + (try declared(profile))
        #expect(seen.count == expected.count, "\(seen)")
        for (got, want) in zip(seen, expected) { #expect(got == want) }
    }

    @Test(arguments: LabScenario.boundingSystems, profileNames) func theAdvertisingBytesAreThoseBlemuAdvPredicts(
        system: LabSystem, _ name: String
    ) async throws {
        let run = try await finished("profile-" + name, system)
        let (_, plan) = try profileAndPlan(name)
        let capture = try BTSnoop(Array(try Data(contentsOf: URL(fileURLWithPath: run.file("\(name).btsnoop")))))
        let index = UInt16(run.peripherals.first?.dropFirst(3) ?? "0") ?? 0
        func hex(_ data: [[UInt8]]) -> [String] {
            data.filter { !$0.isEmpty }.map { $0.map { String(format: "%02X", $0) }.joined() }
        }
        let advertising = hex(capture.advertisingData(index: index))
        let scanResponse = hex(capture.scanResponseData(index: index))
        // Every non-empty programming of hci0 during the run, not just one: a later rewrite must agree too.
        #expect(!advertising.isEmpty && !scanResponse.isEmpty, "\(capture.commands.count) commands captured")
        #expect(advertising.allSatisfy { $0 == plan["adv"] as? String }, "\(advertising) vs \(plan["adv"] ?? "")")
        #expect(
            scanResponse.allSatisfy { $0 == plan["scanResponse"] as? String },
            "\(scanResponse) vs \(plan["scanResponse"] ?? "")")
    }

    @Test(arguments: LabScenario.boundingSystems, profileNames)
    func everyRequestOfTheProbeIsAnsweredOnceAndBlemuStopsCleanly(
        system: LabSystem, _ name: String
    ) async throws {
        let run = try await finished("profile-" + name, system)
        #expect(trimmed(run, "\(name)-run-rc") == "0", "SIGTERM exits 0")
        let summary = try #require(
            read(run, "\(name)-run.log").split(separator: "\n").last { $0.hasPrefix("stopped: ") },
            "\(tails(run, ["\(name)-run.log"]))")
        let numbers = summary.split { !$0.isNumber }.compactMap { Int($0) }
        #expect(numbers.count == 2 && numbers.first == numbers.last, "\(summary)")
    }

    @Test func theStoriesIncludeBothNameCutsAndHeartRate() {
        // Story 2 must cover heart-rate, a name Core Bluetooth's rule cuts to 8 bytes, and one bluetoothd cuts at 29.
        #expect(Self.profileNames.contains("heart-rate"))
        let cuts = ProfilesScenario.profiles.compactMap { profile -> Int? in
            let plan = try? JSONSerialization.jsonObject(with: LabScenario.blemu(["adv", "--json", profile.path]))
            guard (plan as? [String: Any])?["localNameShortened"] as? Bool == true else { return nil }
            return profile.localName.utf8.count
        }
        #expect(Set(cuts).isSuperset(of: [8, 29]), "shortened names' lengths: \(cuts)")
    }

    // MARK: Story 3: two centrals

    /// Whether bluetoothd gives each subscribing device a notify socket that reaches that device only (5.76+,
    /// commit a08ec1a4e on top of 5.69's 8eb1dee87): then blemu reports each device as a central of its own.
    static func notifiesPerDevice(_ system: LabSystem) -> Bool { system.bluez.isAtLeast("5.76") }

    /// The value the story's targeted notify sent to hci1 only (`blemu ctl notify --central`), as the centrals
    /// record values; nil when blemu refused it.
    private func targetedValue(_ run: LabRun) throws -> String? {
        guard trimmed(run, "two-targeted-rc") == "0" else { return nil }
        let response = try #require(
            try JSONSerialization.jsonObject(with: Data(read(run, "two-targeted.json").utf8)) as? [String: Any])
        return (response["hex"] as? String)?.replacingOccurrences(of: " ", with: "").uppercased()
    }

    @Test(arguments: LabScenario.boundingSystems, ["hci1", "hci2"]) func eachCentralReceivesEveryValueInOrder(
        system: LabSystem, _ adapter: String
    ) async throws {
        let run = try await finished("two-centrals", system)
        let values = read(run, "two-\(adapter).values").split(separator: "\n").map(String.init)
        var expected = ProfilesScenario.temperatures.map { ThermostatScenario.hex(centidegrees: $0) }
        // With a socket per device, the value targeted at hci1 reaches hci1 first, and hci2 never sees it.
        if Self.notifiesPerDevice(system), adapter == "hci1" {
            expected.insert(try #require(try targetedValue(run), "\(read(run, "two-targeted.json"))"), at: 0)
        }
        #expect(values == expected, "\(tails(run, ["two-\(adapter).log", "two-run.log"]))")
        #expect(trimmed(run, "two-\(adapter)-central-rc") == "0")
    }

    /// The Device1 path bluetoothd gives the central on `adapter` under hci0.
    private func devicePath(_ run: LabRun, _ adapter: String) -> String {
        "/org/bluez/hci0/dev_" + (run.address(of: adapter) ?? "?").replacingOccurrences(of: ":", with: "_")
    }

    private func centrals(_ run: LabRun, _ name: String) throws -> [String: [String]] {
        let response = try #require(
            try JSONSerialization.jsonObject(with: Data(read(run, name).utf8)) as? [String: Any], "\(read(run, name))")
        let list = try #require(response["centrals"] as? [[String: Any]], "\(response)")
        return Dictionary(
            list.map { ($0["id"] as? String ?? "?", $0["subscriptions"] as? [String] ?? ["?"]) },
            uniquingKeysWith: { a, _ in a })
    }

    @Test(arguments: LabScenario.boundingSystems) func twoCentralsAreReportedAsBluetoothdCarriesThem(
        system: LabSystem
    ) async throws {
        let run = try await finished("two-centrals", system)
        let hci1 = devicePath(run, "hci1")
        let hci2 = devicePath(run, "hci2")
        let events = events(run, "two-events.jsonl")
        func ofType(_ type: String) -> [[String: Any]] { events.filter { $0["type"] as? String == type } }
        #expect(Set(ofType("connected").compactMap { $0["central"] as? String }) == [hci1, hci2])
        #expect(ofType("connected").count == 2)
        #expect(Set(ofType("disconnected").compactMap { $0["central"] as? String }) == [hci1, hci2])
        #expect(try centrals(run, "two-centrals-after.json") == ["*": []])
        // `ctl centrals` keeps who left; from 5.83 with bluetoothd's reason: the centrals hung up themselves.
        let after = try JSONSerialization.jsonObject(with: Data(read(run, "two-centrals-after.json").utf8))
        let disconnects = (after as? [String: Any])?["disconnects"] as? [[String: Any]] ?? []
        #expect(Set(disconnects.compactMap { $0["central"] as? String }) == [hci1, hci2], "\(disconnects)")
        let reasons = disconnects.map { $0["reason"] as? String }
        #expect(reasons.allSatisfy { $0 == (system.bluez.isAtLeast("5.83") ? "Remote" : nil) }, "\(disconnects)")
        let notified = ofType("notification")
        if Self.notifiesPerDevice(system) {
            // One AcquireNotify per device, each socket reaching its device only (src/gatt-database.c
            // `client_notify_io_get`, `sock_io_read` -> `send_notification_to_device`): the first subscriber is
            // reported as "*" until the second AcquireNotify shows the sockets are per device, and then as itself.
            #expect(
                try centrals(run, "two-centrals.json") == [
                    hci1: [ProfilesScenario.notifyID], hci2: [ProfilesScenario.notifyID],
                    // The "*" the first subscription was reported as stays listed, with nothing subscribed.
                    "*": [],
                ])
            #expect(
                ofType("subscribed").compactMap { $0["central"] as? String } == ["*", hci1, hci2],
                "\(ofType("subscribed"))")
            #expect(
                ofType("unsubscribed").compactMap { $0["central"] as? String }.filter { $0 != "*" }.sorted()
                    == [hci1, hci2].sorted())
            #expect(trimmed(run, "two-targeted-rc") == "0", "\(read(run, "two-targeted.json"))")
            // The targeted update went to one central, the others to both.
            #expect(notified.count == ProfilesScenario.temperatures.count + 1, "\(notified)")
            #expect(notified.first?["centrals"] as? Int == 1)
            #expect(notified.dropFirst().allSatisfy { $0["centrals"] as? Int == 2 })
        } else {
            // 5.66 calls AcquireNotify once, for the first subscriber; the second only raises bluetoothd's count
            // (`ccc_write_cb`), and every datagram goes to both (`send_notification_to_devices`). So blemu lists
            // each connected device as a central, and the one subscription as the central "*" standing for both.
            #expect(try centrals(run, "two-centrals.json") == [hci1: [], hci2: [], "*": [ProfilesScenario.notifyID]])
            #expect(ofType("subscribed").map { $0["central"] as? String } == ["*"])
            // Both left: the last StopNotify closes the socket, so blemu hears one unsubscription.
            #expect(ofType("unsubscribed").map { $0["central"] as? String } == ["*"])
            // Nobody but "*" is subscribed, so an update for hci1 alone is refused, naming who is.
            #expect(trimmed(run, "two-targeted-rc") == "65")
            #expect(read(run, "two-targeted.json").contains("subscribed: *"), "\(read(run, "two-targeted.json"))")
            #expect(notified.count == ProfilesScenario.temperatures.count, "\(notified)")
            #expect(notified.allSatisfy { $0["centrals"] as? Int == 1 })
        }
    }

    // MARK: Story 4: the flood

    private func counters(_ run: LabRun, _ name: String) throws -> [String: Any] {
        let response = try #require(
            try JSONSerialization.jsonObject(with: Data(read(run, name).utf8)) as? [String: Any], "\(read(run, name))")
        return try #require(response["counters"] as? [String: Any], "\(response)")
    }

    @Test(arguments: LabScenario.boundingSystems)
    func aFloodWhileBluetoothdIsStoppedArrivesWholeAndInOrderThroughQueueFullAndReady(system: LabSystem) async throws {
        let run = try await finished("flood", system)
        #expect(trimmed(run, "flood-central-rc") == "0", "\(tails(run, ["flood.log", "flood-run.log"]))")
        let values = read(run, "flood.values").split(separator: "\n").map(String.init)
        let expected = ProfilesScenario.floodValues.map { ThermostatScenario.hex(centidegrees: $0) }
        #expect(values.count == expected.count)
        if values != expected {
            let first = zip(values, expected).prefix { $0 == $1 }.count
            Issue.record("values differ from index \(first): \(values.dropFirst(first).prefix(5))")
        }

        let events = events(run, "flood-events.jsonl")
        func count(_ type: String) -> Int { events.filter { $0["type"] as? String == type }.count }
        let full = count("queue-full")
        let ready = count("queue-ready")
        print(
            "flood: \(values.count) values, \(full) queue-full, \(ready) queue-ready, \(count("notification")) notified"
        )
        #expect(full > 0, "the flood never filled the queue: it proves nothing about retry")
        #expect(ready > 0, "the queue never said ready")
        // The last event of the queue is a ready: nothing was left waiting for one.
        let queueEvents = events.compactMap { $0["type"] as? String }.filter { $0.hasPrefix("queue-") }
        #expect(queueEvents.last == "queue-ready")
        #expect(count("notification") == expected.count)

        let stalled = try counters(run, "flood-counters-stalled.json")
        #expect(stalled["waiting"] as? Int ?? 0 > 0, "nothing waited while bluetoothd was stopped: \(stalled)")
        let after = try counters(run, "flood-counters.json")
        #expect(after["notificationsDropped"] as? Int == 0, "\(after)")
        #expect(after["waiting"] as? Int == 0, "\(after)")
        #expect(after["queueFull"] as? Int == full, "\(after)")
        #expect(after["notificationsSent"] as? Int == expected.count, "\(after)")
    }

    // MARK: Story 5: the transfer

    @Test(arguments: LabScenario.boundingSystems) func aLongTransferArrivesWholeInChunksNoLongerThanAnAttributeValue(
        system: LabSystem
    ) async throws {
        let run = try await finished("transfer", system)
        #expect(trimmed(run, "transfer-central-rc") == "0", "\(tails(run, ["transfer.log", "transfer-run.log"]))")
        var chunks = read(run, "transfer.values").split(separator: "\n").map(String.init)
        #expect(chunks.last == ProfilesScenario.endOfMessage)
        chunks.removeLast()
        let sizes = chunks.map { $0.count / 2 }
        // The link's MTU is 517, but bluetoothd 5.66 passes at most 512 bytes of a notify-socket datagram.
        #expect(sizes.allSatisfy { $0 <= 512 }, "\(Set(sizes).sorted())")
        let bytes = chunks.flatMap { chunk in
            stride(from: 0, to: chunk.count, by: 2).compactMap { offset -> UInt8? in
                let start = chunk.index(chunk.startIndex, offsetBy: offset)
                return UInt8(chunk[start..<chunk.index(start, offsetBy: 2)], radix: 16)
            }
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let expected = ProfilesScenario.transferText
        #expect(bytes.count == expected.utf8.count, "\(chunks.count) chunks")
        if text != expected {
            let first = zip(text, expected).prefix { $0 == $1 }.count
            Issue.record("the text differs from character \(first): \(text.dropFirst(first).prefix(80))")
        }
        let notified = events(run, "transfer-events.jsonl").filter { $0["type"] as? String == "notification" }
        #expect(notified.count == chunks.count + 1)
    }

    @Test(arguments: LabScenario.boundingSystems) func timingsAreRecorded(system: LabSystem) async throws {
        let run = try await ProfilesScenario.shared.run(on: system)
        print(
            "profiles lab: qemu start to command \(run.untilCommand.map(LabMachine.seconds) ?? "?"), "
                + "total \(LabMachine.seconds(run.total))")
        print(read(run, "scenario-steps"))
        #expect(run.total > .zero)
    }
}
