import Foundation
import Logging
import Testing

@testable import Lab

/// How a finished VM's results directory becomes an exit code or a clear failure, checked on hand-written files.
struct LabOutcomeTests {
    private func machine(with files: [String: String]) throws -> LabMachine {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blemu-lab-outcome-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let configuration = LabConfiguration(resultsDirectory: directory.path, timeout: .seconds(60))
        return LabMachine(configuration: configuration, logger: Logger(label: "test"))
    }

    private func step(_ name: String, at seconds: Int) -> LabRun.Step {
        LabRun.Step(name: name, sinceStart: .seconds(seconds), guestUptime: nil)
    }

    @Test func anExitCodeFromTheVMIsTheRunsExitCode() throws {
        let lab = try machine(with: ["vm-rc": "3\n", "controllers": "hci0 00:AA:01:00:00:00\nhci1 00:AA:01:01:00:01\n"])
        let run = try lab.outcome(status: 0, steps: [step("command", at: 12)], total: .seconds(14)).get()
        #expect(run.exitCode == 3)
        #expect(run.address(of: "hci1") == "00:AA:01:01:00:01")
        #expect(run.untilCommand == .seconds(12))
    }

    @Test func aFailedStepIsNamedWithItsReasonAndTheLogsThatExplainIt() throws {
        let lab = try machine(with: [
            "lab-failure": "peripheral-hci0\nblemu run on hci0 exited before advertising\n",
            "blemu-hci0.log": "Error: Unknown option '--adapter'\n",
            "console.log": "\u{1B}c\u{1B}[?7l\u{1B}[2JSeaBIOS\nblemu-lab: step peripheral-hci0\n",
        ])
        let result = lab.outcome(status: 0, steps: [step("peripheral-hci0", at: 15)], total: .seconds(17))
        guard case .failure(.stepFailed(let name, let reason, let tail)) = result else {
            Issue.record("expected a step failure, got \(result)")
            return
        }
        #expect(name == "peripheral-hci0")
        #expect(reason == "blemu run on hci0 exited before advertising")
        #expect(tail.contains("Unknown option '--adapter'"))
        #expect(tail.contains("\nSeaBIOS\n"), "terminal escapes are stripped from the console: \(tail)")
    }

    @Test func aKilledVMReportsTheStepItWasInAsATimeout() throws {
        let lab = try machine(with: ["command.log": "still sleeping\n"])
        let result = lab.outcome(
            status: 124, steps: [step("power", at: 11), step("command", at: 13)], total: .seconds(60))
        guard case .failure(let error) = result, case .timedOut(let name, let seconds, let tail) = error else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
        #expect(name == "command")
        #expect(seconds == 60)
        #expect(tail.contains("still sleeping"))
        #expect(error.description.contains("timed out after 60 s in step 'command'"))
    }

    @Test func aVMThatStopsEarlyIsAMachineFailureNotATimeout() throws {
        let lab = try machine(with: ["console.log": "blemu-lab: initramfs: mounting the host root over 9p failed\n"])
        let result = lab.outcome(status: 0, steps: [], total: .seconds(5))
        guard case .failure(.machineFailed(_, let name, let tail)) = result else {
            Issue.record("expected a machine failure, got \(result)")
            return
        }
        #expect(name == "boot")
        #expect(tail.contains("mounting the host root over 9p failed"))
    }
}
