import DBus
import Logging
import Serving
import Testing

@testable import blemu

/// `blemu run` hands its options to `blemu-serve` as a command line (issue 14): what one writes the other reads
/// back whole, and nothing else is read.
struct RunOptionsTests {
    @Test func everyOptionSurvivesTheHandOver() throws {
        var options = RunOptions(file: "profiles/heart rate.yaml")
        options.nameSuffix = " #2"
        options.adapter = "hci1"
        options.bus = .address("unix:path=/tmp/bus")
        options.logLevel = .trace
        options.verbose = true
        options.requestDeadline = 2.5
        options.control = "/tmp/c.sock"
        options.events = "-"
        options.restoreID = "a/b"
        options.stateDirectory = "/var/tmp/state"
        options.acquireWrite = true
        options.acquireNotify = false
        #expect(try RunOptions(arguments: options.arguments) == options)
        let defaults = RunOptions(file: "x.yaml")
        #expect(try RunOptions(arguments: defaults.arguments) == defaults)
    }

    @Test func theParsedCommandHandsOverWhatWasTyped() throws {
        let command = try RunCommand.parse([
            "p.yaml", "--adapter", "hci2", "--bus", "session", "--events", "e.jsonl", "--no-acquire-notify", "-v",
        ])
        var expected = RunOptions(file: "p.yaml")
        expected.adapter = "hci2"
        expected.bus = .session
        expected.events = "e.jsonl"
        expected.acquireNotify = false
        expected.verbose = true
        #expect(command.options == expected)
    }

    @Test(arguments: [
        [], ["--adapter", "hci0"], ["p.yaml", "--adapter"], ["p.yaml", "--fly"], ["p.yaml", "--log-level", "loud"],
        ["p.yaml", "--request-deadline", "soon"], ["p.yaml", "--request-deadline", "30.0"],
    ])
    func anythingElseIsAUsageError(arguments: [String]) {
        #expect(throws: RunOptions.UsageError.self) { try RunOptions(arguments: arguments) }
    }
}
