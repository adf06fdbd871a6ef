import Foundation

@testable import Lab

/// One boot, four controllers, five stories told with the real `blemu run` on hci0, each starting and stopping its
/// own `blemu run`, by one guest script (Fixtures/lab-profiles.sh, with the values below as its parameters) that
/// leaves its evidence in the results directory:
///
/// 1. every bundled profile (profiles/*.yaml) is probed by `blemu probe --json` on hci1, matched by the name and
///    service UUID `blemu adv` predicts;
/// 2. meanwhile `btmon -w` records what the kernel programs into hci0, to compare with `blemu adv --json`;
/// 3. two centrals (hci1, hci2) subscribe to one characteristic of Fixtures/lab-thermostat.yaml and receive the
///    values set through `blemu ctl` (5.66 sends every datagram to every subscriber: docs/bluez.md);
/// 4. with bluetoothd stopped, more values than its socket and blemu's queue hold: full, ready, retry, no loss;
/// 5. a transfer (profiles/transfer.yaml's shape, with a long text) in chunks of the link's largest update.
///
/// The expected facts (names, UUIDs, bytes, GATT trees) come from `blemu show --json` and `blemu adv --json` run
/// on the host, never from copies in the tests.
enum ProfilesScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(length: .long, boot: boot)

    /// One profile of stories 1 and 2 and what the host's blemu predicts for it.
    struct Profile: Sendable {
        /// The file's base name: "heart-rate".
        var name: String
        /// Whether it is one of profiles/*.yaml (else a fixture of the lab's own).
        var isBundled: Bool
        /// Its absolute path.
        var path: String
        /// `blemu adv --json`'s local name, which the probe matches on.
        var localName: String
        /// `blemu adv --json`'s first advertised UUID, which the probe matches on too.
        var firstUUID: String
    }

    /// Every profiles/*.yaml, sorted, then Fixtures/lab-advertising.yaml (what no bundled profile advertises: the
    /// kernel's TX power, service data, an overflowing UUID, a name bluetoothd cuts itself) and
    /// Fixtures/lab-core-bluetooth-name.yaml (a name cut by Core Bluetooth's 8-byte rule), each with the name and
    /// UUID `blemu adv --json` predicts; empty when blemu is missing (the suite is then disabled anyway).
    static let profiles: [Profile] = {
        let directory = LabScenario.package + "/profiles"
        let bundled = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".yaml") }.sorted().map { directory + "/" + $0 }
        let fixtures = ["lab-advertising.yaml", "lab-core-bluetooth-name.yaml"].map { LabScenario.fixtures + "/" + $0 }
        return (bundled + fixtures).compactMap { path in
            guard
                let plan = try? JSONSerialization.jsonObject(with: LabScenario.blemu(["adv", "--json", path]))
                    as? [String: Any],
                let name = plan["localName"] as? String, let uuid = (plan["advertised"] as? [String])?.first
            else { return nil }
            let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            return Profile(
                name: file, isBundled: bundled.contains(path), path: path, localName: name, firstUUID: uuid)
        }
    }()

    /// The profile of stories 3 and 4: a notifying temperature and no schedules of its own.
    static let notifyProfile = LabScenario.fixtures + "/lab-thermostat.yaml"
    /// The characteristic the centrals subscribe to, its field, and its UUID as bluetoothd spells it.
    static let notifyID = "temperature"
    static let notifyField = "centidegrees"
    static let notifyUUID = "00002a6e-0000-1000-8000-00805f9b34fb"
    /// The temperatures set through `blemu ctl` in story 3, in order; the last one ends each central's wait.
    static let temperatures = Array(2001...2008)

    /// Story 4's values, set back to back while bluetoothd is stopped: more than its notify socket (about 278
    /// small datagrams with Linux's default 208 KiB buffer) and the 16-update queue hold together.
    static let floodValues = Array(1...400)

    /// Story 5's transfer: this many 64-byte lines, sent in chunks of the link's largest update and then "EOM".
    static let transferLines = 500
    /// The transfer's characteristic UUID (profiles/transfer.yaml's).
    static let transferUUID = "2f016955-e675-49a6-9176-111e2a1cf333"
    /// The transfer's text: numbered lines, so a lost, repeated or reordered chunk shows where.
    static let transferText: String = (1...transferLines).map { index in
        let number = String(index)
        let prefix = "line " + String(repeating: "0", count: max(0, 5 - number.count)) + number + " "
        return prefix + String(repeating: "abcdefghijklmnopqrstuvwxyz", count: 3).prefix(63 - prefix.count) + "\n"
    }.joined()
    /// "EOM", as the centrals spell values.
    static let endOfMessage = "454F4D"

    /// How long each central may take from discovery to its last value, in seconds.
    static let centralSeconds = 90

    /// The story names, in the order the script tells them; each leaves `<name>.rc` (and `<name>.failure`).
    static var stories: [String] { profiles.map { "profile-" + $0.name } + ["two-centrals", "flood", "transfer"] }

    /// Story 5's profile: profiles/transfer.yaml's service and characteristic with a text of `transferLines`.
    static var transferProfile: String {
        let lines = transferText.split(separator: "\n").map { "            - { text: \"\($0)\\n\" }" }
        return """
            # Generated by Tests/LabTests/ProfilesScenario.swift: profiles/transfer.yaml with a long text.
            name: Lab Transfer
            advertisement:
              local-name: Transfer
              service-uuids: [E71EE188-279F-4ED6-8055-12D77BFD900C]
            services:
              - id: transfer
                uuid: E71EE188-279F-4ED6-8055-12D77BFD900C
                characteristics:
                  - id: transfer-text
                    uuid: \(transferUUID.uppercased())
                    properties: [notify]
                    initial: { text: "" }
            behaviour:
              schedules:
                - characteristic: transfer-text
                  action: transfer
                  start: first-subscription
                  value:
                    sequence:
                      repeats: false
                      values:
            \(lines.joined(separator: "\n"))
                        - { text: "EOM" }

            """
    }

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        try transferProfile.write(toFile: results + "/lab-transfer.yaml", atomically: true, encoding: .utf8)
        try guestParameters.write(toFile: results + "/profiles.env", atomically: true, encoding: .utf8)
        try profileList.write(toFile: results + "/profiles.list", atomically: true, encoding: .utf8)
        // No profiles for the stack to start: the script runs blemu itself on hci0, once per story. hci3 is only a
        // bystander for story 3 (see the script). Ten probes, two centrals, a flood and a transfer take about 385 s
        // under TCG on 2 cores with BlueZ 5.66 and more with 5.82, whose central discovers more, and up to 510 s with
        // 5.87 beside another suite's VM (2026-11-27): the limit only has to catch a hang.
        return try await LabScenario.bootScripted(
            in: results, controllers: 4, timeout: .seconds(900), on: system,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-profiles.sh", results + "/profiles.env",
                results + "/profiles.list",
            ])
    }

    /// The values Fixtures/lab-profiles.sh runs with, which the tests assert on, as shell assignments.
    static var guestParameters: String {
        let q = GuestStack.shellQuote
        let values: [(String, String)] = [
            ("B", LabScenario.blemuExecutable), ("CENTRAL_SECONDS", String(centralSeconds)),
            ("NOTIFY_PROFILE", notifyProfile), ("NOTIFY_UUID", notifyUUID), ("NOTIFY_ID", notifyID),
            ("NOTIFY_FIELD", notifyField),
            ("TEMPERATURES", temperatures.map(String.init).joined(separator: " ")),
            ("LAST_TEMPERATURE", ThermostatScenario.hex(centidegrees: temperatures.last ?? 0)),
            ("FLOOD_FIRST", String(floodValues.first ?? 0)), ("FLOOD_LAST", String(floodValues.last ?? 0)),
            ("LAST_FLOOD", ThermostatScenario.hex(centidegrees: floodValues.last ?? 0)),
            ("TRANSFER_UUID", transferUUID), ("END_OF_MESSAGE", endOfMessage),
        ]
        return values.map { "\($0.0)=\(q($0.1))\n" }.joined()
    }

    /// The profiles stories 1 and 2 probe, one per line: name, path, local name and first UUID, tab-separated.
    static var profileList: String {
        profiles.map { [$0.name, $0.path, $0.localName, $0.firstUUID].joined(separator: "\t") + "\n" }.joined()
    }
}
