import Foundation
import Testing

@testable import Lab

/// Three VMs on one RootCanal air (`SharedAirScenario`): a central on BlueZ 5.87 reads, writes and subscribes to a
/// thermostat served by BlueZ 5.66 in another VM, and holds two straps served in a third.
@Suite(
    .needsLab, .needsBlemuRun,
    .enabled(
        if: SharedAirScenario.isAvailable,
        "needs RootCanal and the systems current and debian-12 (scripts/setup --lab)"),
    .labSuiteTimeLimit)
struct SharedAirScenarioTests {
    private func finishedRun() async throws -> LabRun {
        let system = try LabSystem.resolve(SharedAirScenario.centralSystem)
        return try await LabTests.finishedRun(
            of: SharedAirScenario.shared, on: LabTarget(system: system, radio: .rootcanal),
            showing: ["command.log", "verify.err", "radio.log", "fleet-failures"])
    }

    @Test func eachSideRunsItsOwnBlueZAndThePeripheralsAreListedByTheirVMs() async throws {
        let run = try await finishedRun()
        #expect(run.bluezVersion == "5.87")
        for vm in ["vm1", "vm2"] {
            #expect(read(run, vm + "/bluez-version").hasPrefix("5.66"), "\(vm)")
        }
        let environment = read(run, "environment")
        #expect(environment.contains("BLEMU_LAB_PERIPHERAL=vm1/hci0,vm1/hci1,vm2/hci0\n"), "\(environment)")
        #expect(environment.contains("BLEMU_LAB_CENTRAL=hci0\n"), "\(environment)")
        // RootCanal gives addresses in the order the relay connects the controllers: the central's first.
        #expect(environment.contains("BLEMU_LAB_CENTRAL_ADDRESS=DA:4C:10:DE:00:00\n"), "\(environment)")
        #expect(
            environment.contains(
                "BLEMU_LAB_PERIPHERAL_ADDRESS=DA:4C:10:DE:00:01,DA:4C:10:DE:00:02,DA:4C:10:DE:00:03\n"),
            "\(environment)")
        #expect(read(run, "fleet-failures").isEmpty)
        // Each peripheral's control socket is one of this VM's, joined to its own VM's (ControlBridge).
        #expect(
            environment.contains(
                "BLEMU_LAB_CONTROLS=/run/blemu/vm1/hci0.sock,/run/blemu/vm1/hci1.sock,/run/blemu/vm2/hci0.sock\n"),
            "\(environment)")
    }

    @Test func theCommandSteersAPeripheralInAnotherVMThroughItsControlSocket() async throws {
        let run = try await finishedRun()
        let answers = read(run, "control.json")
        #expect(read(run, "control.rc").hasPrefix("0"), "\(answers) \(read(run, "control.err"))")
        // The pause, the set and the get each answered once, by the thermostat in vm2: 20.00 % humidity as set.
        let lines = answers.split(separator: "\n")
        #expect(lines.count == 3, "\(answers)")
        let hex = lines.dropFirst().map {
            ((try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["hex"] as? String)?
                .lowercased()
        }
        #expect(hex == ["d007", "d007"], "\(answers)")
        #expect(read(run, "vm2/bridge.log").contains("connected"), "the thermostat's VM carried the connections")
    }

    @Test func aCentralOn587ReadsWritesAndSubscribesToAPeripheralOn566() async throws {
        let run = try await finishedRun()
        let report = try #require(
            try? JSONSerialization.jsonObject(with: Data(read(run, "verify.json").utf8)) as? [String: Any],
            "verify.json: \(read(run, "verify.json"))")
        let checks = report["checks"] as? [[String: Any]] ?? []
        let passed = { (kind: String) in
            checks.filter { $0["category"] as? String == kind && $0["status"] as? String == "pass" }.count
        }
        #expect(passed("gatt") > 0 && passed("value") > 0 && passed("write") > 0, "\(checks)")
        // The advertisement is left out: on an air with other advertisers the thermostat's scan response (its name)
        // can reach the central's kernel apart from its advertisement, and bluetoothd drops a report without Flags
        // (docs/lab.md, "RootCanal's air"). Everything a central reads, writes and subscribes to must hold.
        let failed = checks.filter { $0["status"] as? String == "fail" && $0["category"] as? String != "advertisement" }
        #expect(failed.isEmpty, "\(failed)")
        let thermostat = LabTests.events(run, "vm2/events-hci0.jsonl")
        #expect(thermostat.contains { $0["type"] as? String == "subscribed" }, "the verify subscribed")
        #expect(thermostat.contains { $0["type"] as? String == "pairing" }, "the verify paired")
        // The thermostat, in vm2, counted the verify's requests and answered each.
        let counters = LabSummary(run: run, profiles: SharedAirScenario.profiles).peripherals
        let figures = try #require(counters.first { $0.controller == "vm2/hci0" })
        #expect((figures.requests ?? 0) > 0 && figures.unanswered == 0, "\(figures)")
    }

    @Test func theGatewayHoldsTheStrapsOfAnotherVM() async throws {
        let run = try await finishedRun()
        let output = read(run, "gateway.out")
        #expect(read(run, "gateway.rc").hasPrefix("0"), "\(output)")
        #expect(output.contains("connected to 2 straps at once"), "\(output)")
        // Each strap's own event log, in its VM's results, shows the gateway subscribed.
        for events in ["vm1/events-hci0.jsonl", "vm1/events-hci1.jsonl"] {
            #expect(LabTests.events(run, events).contains { $0["type"] as? String == "subscribed" }, "\(events)")
        }
    }
}
