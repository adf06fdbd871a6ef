import Foundation
import ProbeCentral
import Testing

@testable import Lab

/// The real `blemu run` on hci0 steered through `blemu ctl` while `blemu probe` watches on hci1, then restored
/// after `kill -9` (`ThermostatScenario`: one boot, one guest script, assertions on its files).
@Suite(
    .needsLab, .needsBlemuRun,
    .labSuiteTimeLimit)
struct ThermostatScenarioTests {
    /// The run, checked to have finished the script: a failed step names itself in the message.
    private func finishedRun(_ system: LabSystem) async throws -> LabRun {
        try await LabTests.finishedRun(
            of: ThermostatScenario.shared, on: system, showing: ["blemu-run-1.log", "blemu-run-2.log", "probe.err"])
    }

    @Test(arguments: LabScenario.boundingSystems)
    func temperatureNotificationsCarryExactlyTheValuesSetThroughCtlInOrder(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        #expect(
            read(run, "probe-rc").trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(tails(run, ["probe.err"]))"
        )
        let report = try JSONDecoder().decode(ProbeReport.self, from: Data(read(run, "probe.json").utf8))
        let temperature = try #require(report.characteristics.first { $0.uuid == "2A6E" }, "\(report.services)")
        #expect(temperature.subscribeError == nil)
        let expected = ThermostatScenario.temperatures.map { ThermostatScenario.hex(centidegrees: $0) }
        #expect(
            temperature.notifications.map(\.hex) == expected,
            "\(temperature.notifications)\n\(tails(run, ["events.jsonl", "blemu-run-1.log"]))")
    }

    @Test(arguments: LabScenario.boundingSystems) func everyCtlSetAndCountersAnswerOk(system: LabSystem) async throws {
        let run = try await finishedRun(system)
        for (index, value) in ThermostatScenario.temperatures.enumerated() {
            let response = try JSONSerialization.jsonObject(with: Data(read(run, "ctl-set-\(index + 1).json").utf8))
            let object = try #require(response as? [String: Any])
            #expect(object["ok"] as? Bool == true, "\(object)")
            #expect(object["hex"] as? String == ThermostatScenario.hex(centidegrees: value), "\(object)")
            #expect((object["fields"] as? [String: Any])?["centidegrees"] as? Int == value, "\(object)")
        }
        let counters = read(run, "ctl-counters.json")
        #expect(read(run, "ctl-counters-rc").trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(counters)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(counters.utf8)) as? [String: Any])
        #expect(object["ok"] as? Bool == true, "\(counters)")
        let sent = (object["counters"] as? [String: Any])?["notificationsSent"] as? Int ?? -1
        #expect(sent >= ThermostatScenario.temperatures.count, "\(counters)")
    }

    @Test(arguments: LabScenario.boundingSystems) func theEventLogHasParseableLinesIncludingTheNotifications(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let lines = read(run, "events.jsonl").split(separator: "\n")
        var events: [[String: Any]] = []
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["type"] is String, "not an event line: \(line)")
            if let object { events.append(object) }
        }
        let notified = events.filter {
            $0["type"] as? String == "notification" && $0["characteristic"] as? String == "temperature"
        }
        let expected = ThermostatScenario.temperatures.map { ThermostatScenario.hex(centidegrees: $0) }
        #expect(notified.compactMap { $0["value"] as? String } == expected, "\(tails(run, ["events.jsonl"]))")
        #expect(events.contains { $0["type"] as? String == "subscribed" }, "\(tails(run, ["events.jsonl"]))")
    }

    @Test(arguments: LabScenario.boundingSystems) func aSetPointWrittenBeforeKill9IsReadBackAfterTheRestart(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let write = read(run, "central-write.txt")
        #expect(write.contains("read \(ThermostatScenario.initialSetPoint)\n"), "the profile's value first: \(write)")
        #expect(write.contains("wrote \(ThermostatScenario.writtenSetPoint)\n"), "\(write)")
        #expect(read(run, "state-after-write.json").contains(ThermostatScenario.writtenSetPoint))
        #expect(read(run, "blemu-run-1-rc").trimmingCharacters(in: .whitespacesAndNewlines) == "137", "SIGKILL")
        let readBack = read(run, "central-read.txt")
        #expect(
            readBack.contains("read \(ThermostatScenario.writtenSetPoint)\n"),
            "\(readBack)\n\(tails(run, ["blemu-run-2.log"]))")
        #expect(!readBack.contains("read \(ThermostatScenario.initialSetPoint)\n"))
    }

    @Test(arguments: LabScenario.boundingSystems) func theSecondRunLogsThatItRestoredTheState(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let log = read(run, "blemu-run-2.log")
        #expect(
            log.contains("restoring") && log.contains(ThermostatScenario.restoreID),
            "\(tails(run, ["blemu-run-2.log"]))")
        #expect(!read(run, "blemu-run-1.log").contains("restoring"), "the first run started fresh")
        #expect(read(run, "blemu-run-2-rc").trimmingCharacters(in: .whitespacesAndNewlines) == "0", "SIGTERM exits 0")
    }

    @Test(arguments: LabScenario.boundingSystems) func timingsAreRecorded(system: LabSystem) async throws {
        let run = try await ThermostatScenario.shared.run(on: system)
        print(
            "thermostat lab: qemu start to command \(run.untilCommand.map(LabMachine.seconds) ?? "?"), "
                + "total \(LabMachine.seconds(run.total))")
        print(read(run, "scenario-steps"))
        #expect(run.total > .zero)
    }
}
