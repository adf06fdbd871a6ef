import Foundation
import Testing

@testable import Lab

/// A fleet of four straps and one gateway central (`FleetScenario`): every strap is found under its own name, held
/// connected at once, and streams plausible measurements; each strap's own counters agree.
@Suite(
    .needsLab, .needsBlemuRun,
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: HeartRateScenario.bleakPython),
        "needs the venv with bleak (scripts/setup --lab)"),
    .labSuiteTimeLimit)
struct FleetScenarioTests {
    @Test(arguments: LabScenario.boundingSystems) func aGatewayHoldsEveryStrapOfTheFleetAndHearsEachStream(
        system: LabSystem
    ) async throws {
        let run = try await FleetScenario.shared.run(on: system)
        let output = read(run, "command.log")
        #expect(run.exitCode == 0, "\(output)\n\(tails(run, ["peripheral-hci0.log", "bluetoothd.log"]))")
        #expect(output.contains("connected to \(FleetScenario.devices) straps at once"), "\(output)")
        let straps = output.split(separator: "\n").filter { $0.hasPrefix("strap ") }
        #expect(straps.count == FleetScenario.devices, "\(output)")
        #expect(straps.allSatisfy { $0.hasSuffix(" ok") }, "\(output)")
        // Each copy under its own name: the first as the profile says, the others with a suffix.
        for number in 2...FleetScenario.devices {
            #expect(output.contains("'Polar H10 A1B2 \(number)'"), "\(output)")
        }
        // Every strap counted what it sent, and answered every request it received.
        for index in 0..<FleetScenario.devices {
            let counters = read(run, "counters-hci\(index).json")
            let json = try JSONSerialization.jsonObject(with: Data(counters.utf8)) as? [String: Any]
            let figures = json?["counters"] as? [String: Any]
            #expect((figures?["notificationsSent"] as? Int ?? 0) >= 3, "hci\(index): \(counters)")
            #expect(figures?["requests"] as? Int == figures?["answered"] as? Int, "hci\(index): \(counters)")
        }
        // A connect retried by the gateway (examples/central-tests/gateway_test.py, `connect`) is allowed, and shown.
        let retries = output.split(separator: "\n").filter { $0.hasPrefix("connect to ") }
        print(
            "fleet lab: " + (output.split(separator: "\n").last { $0.contains("measurements from") } ?? "")
                + (retries.isEmpty ? "" : "; retried: " + retries.joined(separator: "; ")))
    }
}
