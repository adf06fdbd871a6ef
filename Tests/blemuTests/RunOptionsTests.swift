import DBus
import Logging
import Serving
import Testing

@testable import BlemuCLI

/// blemu-cli hands `run`'s options back to `blemu` as a command line: what one writes the other reads back
/// whole, and anything ArgumentParser might read differently is left to blemu-cli.
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
        options.ui = "127.0.0.1:9000"
        #expect(try RunOptions(arguments: options.arguments) == options)
        // `--events -` (stdout) is the one value that may start with a dash.
        #expect(try RunOptions(arguments: ["p.yaml", "--events", "-"]).events == "-")
        let defaults = RunOptions(file: "x.yaml")
        #expect(try RunOptions(arguments: defaults.arguments) == defaults)
    }

    /// ArgumentParser reads `--name-suffix=-2` and `-- -odd.yaml`; handed over, they must come back whole, where the
    /// same line typed is left to blemu-cli.
    @Test func valuesThatLookLikeOptionsSurviveTheHandOverOnly() throws {
        var options = RunOptions(file: "-odd.yaml")
        options.nameSuffix = "-2"
        options.control = "--sock"
        #expect(try RunOptions(arguments: options.arguments, handedOver: true) == options)
        #expect(throws: RunOptions.UsageError.self) { try RunOptions(arguments: options.arguments) }
        let command = try RunCommand.parse(["--name-suffix=-2", "--", "-odd.yaml"])
        #expect(try RunOptions(arguments: command.options.arguments, handedOver: true).nameSuffix == "-2")
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

    /// `--ui` takes an address or none; both executables read the same line the same way.
    @Test func theViewsAddressMayBeLeftOut() throws {
        #expect(try RunOptions(arguments: ["p.yaml", "--ui"]).ui == RunOptions.defaultUIAddress)
        #expect(try RunOptions(arguments: ["p.yaml", "--ui", "--adapter", "hci1"]).ui == RunOptions.defaultUIAddress)
        #expect(try RunOptions(arguments: ["p.yaml", "--ui", "0.0.0.0:80"]).ui == "0.0.0.0:80")
        for typed in [["run", "p.yaml", "-v", "--ui"], ["run", "p.yaml", "--ui", "-v"]] {
            let command = try #require(try Blemu.parseAsRoot(RunCommand.withUIAddress(typed)) as? RunCommand)
            #expect(command.options.ui == RunOptions.defaultUIAddress, "\(typed)")
        }
        let given = try RunCommand.parse(["p.yaml", "--ui", "[::1]:8081"])
        #expect(given.options.ui == "[::1]:8081")
        #expect(RunCommand.withUIAddress(["ui", "--ui"]) == ["ui", "--ui"], "only run's --ui")
        // `lab run`: the option before `--`, never a word of the command after it.
        #expect(
            RunCommand.withUIAddress(["lab", "run", "--ui", "--", "x", "--ui"])
                == ["lab", "run", "--ui", RunOptions.defaultUIAddress, "--", "x", "--ui"])
    }

    /// What blemu-cli (ArgumentParser) must read instead: options first, `=` spellings, short flags, a value that
    /// looks like an option, an option twice, and mistakes, which ArgumentParser explains.
    @Test(arguments: [
        [], ["--adapter", "hci0"], ["-v", "p.yaml"], ["p.yaml", "--adapter"], ["p.yaml", "--adapter=hci1"],
        ["p.yaml", "-v"], ["p.yaml", "--adapter", "-x"], ["p.yaml", "--adapter", "a", "--adapter", "b"],
        ["p.yaml", "--fly"], ["p.yaml", "--log-level", "loud"], ["p.yaml", "--request-deadline", "soon"],
        ["p.yaml", "--request-deadline", "30.0"], ["p.yaml", "--help"],
    ])
    func anythingElseIsLeftToBlemuCLI(arguments: [String]) {
        #expect(throws: RunOptions.UsageError.self) { try RunOptions(arguments: arguments) }
    }
}
