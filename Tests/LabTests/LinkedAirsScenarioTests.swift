import Foundation
import Testing

/// Two airs, one per host, linked over the hosts' network (`LinkedAirsScenario`): a central on one host verifies a
/// peripheral on the other as if they shared one air.
@Suite(
    .needsLab, .needsBlemuRun,
    .enabled(
        if: LinkedAirsScenario.isAvailable,
        "needs root, ip (iproute2), RootCanal and the systems current and debian-12 (scripts/setup --lab)"),
    .labSuiteTimeLimit)
struct LinkedAirsScenarioTests {
    /// The run, failed with each host's output tail when either `blemu lab run` did not exit 0.
    private func outcome() async throws -> LinkedAirsScenario.Outcome {
        let outcome = try await LinkedAirsScenario.shared.value
        let tail = { (directory: String) in
            self.file(directory, "lab-run.out").split(separator: "\n").suffix(25).joined(separator: "\n")
        }
        let report =
            "listener exited \(outcome.listenerStatus):\n\(tail(outcome.listener))\nlinker exited "
            + "\(outcome.linkerStatus):\n\(tail(outcome.linker))\n\(file(outcome.linker, "verify.err"))"
        try #require(outcome.listenerStatus == 0 && outcome.linkerStatus == 0, "\(report)")
        return outcome
    }

    private func file(_ directory: String, _ name: String) -> String {
        (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? ""
    }

    @Test func aCentralOnOneHostVerifiesAPeripheralOnTheOthersAir() async throws {
        let outcome = try await outcome()
        #expect(file(outcome.linker, "verify.rc").hasPrefix("0"), "\(file(outcome.linker, "verify.err"))")
        let report = try #require(
            try? JSONSerialization.jsonObject(with: Data(file(outcome.linker, "verify.json").utf8)) as? [String: Any])
        #expect(report["address"] as? String == LinkedAirsScenario.peripheralAddress)
        let checks = report["checks"] as? [[String: Any]] ?? []
        let passed = { (kind: String) in
            checks.filter { $0["category"] as? String == kind && $0["status"] as? String == "pass" }.count
        }
        #expect(
            passed("advertisement") > 0 && passed("gatt") > 0 && passed("value") > 0 && passed("write") > 0,
            "\(checks)")
        #expect(checks.allSatisfy { $0["status"] as? String != "fail" }, "\(checks)")
        // Each host ran its own BlueZ.
        #expect(file(outcome.listener, "bluez-version").hasPrefix("5.66"))
        #expect(file(outcome.linker, "bluez-version").hasPrefix("5.87"))
    }

    @Test func thePeripheralAnsweredEveryRequestFromTheOtherHostOnce() async throws {
        let outcome = try await outcome()
        let summary = try #require(
            try? JSONSerialization.jsonObject(with: Data(file(outcome.listener, "summary.json").utf8))
                as? [String: Any])
        let thermostat = try #require((summary["peripherals"] as? [[String: Any]])?.first, "\(summary)")
        let requests = thermostat["requests"] as? Int ?? 0
        #expect(requests > 0 && thermostat["answered"] as? Int == requests, "\(thermostat)")
        let events = file(outcome.listener, "events-hci0.jsonl")
        #expect(events.contains(#""type":"subscribed""#) && events.contains(#""type":"pairing""#))
    }

    @Test func theAirsLinkedOverTheHostsNetworkWithAddressesApart() async throws {
        let outcome = try await outcome()
        // The listening host took the other's connection on its address and carried packets both ways.
        let log = file(outcome.listener, "lab.log")
        let endpoint = "\(LinkedAirsScenario.listenAddress):\(LinkedAirsScenario.port)"
        #expect(log.contains("air link: a link from \(endpoint): connected"), "\(log)")
        let carried = try #require(
            log.firstMatch(of: /a link from [0-9.:]+: closed after (\d+) bytes in, (\d+) out/), "\(log)")
        #expect(Int(carried.1) ?? 0 > 1000 && Int(carried.2) ?? 0 > 1000, "\(carried.0)")
        // The listening air keeps DA:4C:10:DE; the linking one drew another byte, so no address is on both.
        let listening = file(outcome.listener, "controllers")
        let linking = file(outcome.linker, "controllers")
        #expect(listening.hasPrefix("hci0 \(LinkedAirsScenario.peripheralAddress)\n"), "\(listening)")
        let linkerAddress = try #require(linking.split(separator: " ").dropFirst().first, "\(linking)")
        #expect(linkerAddress.hasPrefix("DA:4C:10:") && !linkerAddress.hasPrefix("DA:4C:10:DE:"), "\(linking)")
    }
}
