import Foundation
import Testing

@testable import Lab

/// An FTMS trainer as pycycling sees it on real bluetoothd (`TrainerScenario`): every exchange of FTMS 1.0 4.16 that
/// a training app makes, answered as the spec says, and each request answered exactly once.
@Suite(.needsLab, .needsBlemuRun, .labSuiteTimeLimit)
struct TrainerScenarioTests {
    @Test(arguments: LabScenario.boundingSystems)
    func pycyclingRunsAWholeErgSessionAgainstTheTrainer(system: LabSystem) async throws {
        let run = try await TrainerScenario.shared.run(on: system)
        let output = (try? String(contentsOfFile: run.file("command.log"), encoding: .utf8)) ?? ""
        #expect(run.exitCode == 0, "\(output)")
        let passed = output.split(separator: "\n").filter { $0.hasPrefix("ok   ") }
        #expect(passed.count == TrainerScenario.checks, "\(output)")
        #expect(!output.contains("FAIL"), "\(output)")
        // The power followed the target on the air, not in a table: the ERG line names what Indoor Bike Data said.
        #expect(output.contains("reaches 200 W"), "\(output)")
    }

    @Test(arguments: LabScenario.boundingSystems)
    func everyControlPointWriteIsAnsweredOnce(system: LabSystem) async throws {
        let run = try await TrainerScenario.shared.run(on: system)
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: run.file("summary.json"))))
                as? [String: Any])
        let peripheral = try #require((summary["peripherals"] as? [[String: Any]])?.first, "\(summary)")
        let requests = peripheral["requests"] as? Int ?? -1
        #expect(requests >= 11, "the session's reads and control-point writes: \(peripheral)")
        #expect(peripheral["answered"] as? Int == requests && peripheral["unanswered"] as? Int == 0, "\(peripheral)")
        // Each request's answer in the event log too: one `request` line per request, none left unanswered.
        let events = (try? String(contentsOfFile: run.file("events-hci0.jsonl"), encoding: .utf8)) ?? ""
        let requestLines = events.split(separator: "\n").filter { $0.contains(#""type":"request""#) }
        #expect(requestLines.count == requests, "\(requestLines.count) request lines for \(requests) requests")
    }
}
