import Foundation
import Testing

@testable import Lab

// Reading what a lab scenario left in its results directory: every scenario's tests assert on these files.

/// A results file's text; empty when the file is missing (the assertion on its content then says what is wrong).
func read(_ run: LabRun, _ name: String) -> String {
    (try? String(contentsOfFile: run.file(name), encoding: .utf8)) ?? ""
}

/// The last lines of each file, for failure messages: what the script, blemu and the centrals said.
func tails(_ run: LabRun, _ names: [String], lines: Int = 20) -> String {
    names.map { name in
        let text = read(run, name).split(separator: "\n", omittingEmptySubsequences: false).suffix(lines)
        return "--- \(name) (last \(lines) lines)\n" + text.joined(separator: "\n")
    }.joined(separator: "\n")
}

/// A JSON-lines file (blemu's `--events`) as objects, in order; lines that do not parse are left out.
func events(_ run: LabRun, _ name: String = "events.jsonl") -> [[String: Any]] {
    read(run, name).split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
}

/// The scenario's run, required to have finished its guest script (exit 0, no `scenario-failure`); otherwise the
/// test stops with the failed step's reason and the tails of `logs`.
func finishedRun(of scenario: LabScenario, on system: LabSystem, showing logs: [String]) async throws -> LabRun {
    try await finishedRun(of: scenario, on: LabTarget(system: system, radio: .btvirt), showing: logs)
}

/// `finishedRun(of:on:showing:)` on `target`'s radio.
func finishedRun(of scenario: LabScenario, on target: LabTarget, showing logs: [String]) async throws -> LabRun {
    let run = try await scenario.run(on: target)
    let failure = read(run, "scenario-failure")
    try #require(
        run.exitCode == 0 && failure.isEmpty,
        """
        the guest script failed (exit \(run.exitCode)): \(failure)
        \(tails(run, ["scenario-steps", "command.log"] + logs))
        """)
    return run
}
