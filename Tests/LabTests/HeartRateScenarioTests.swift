import Foundation
import Lab
import ProbeCentral
import Testing

@testable import Lab

/// What a phone sees of profiles/heart-rate.yaml served by the real `blemu run`, probed with `blemu probe --json`.
/// Enables itself once the built blemu has `run` (`blemu run --help` exits 0).
@Suite(
    .needsLab, .needsBlemuRun,
    .labSuiteTimeLimit)
struct HeartRateScenarioTests {
    private func report(_ system: LabSystem) async throws -> ProbeReport {
        let run = try await HeartRateScenario.shared.run(on: system)
        #expect(run.exitCode == 0, "blemu probe failed; see \(run.file("command.log"))")
        let json = try String(contentsOfFile: run.file("probe.json"), encoding: .utf8)
        return try JSONDecoder().decode(ProbeReport.self, from: Data(json.utf8))
    }

    @Test(arguments: LabScenario.boundingSystems) func theScanSeesTheAdvertisedNameAndServices(
        system: LabSystem
    ) async throws {
        let device = try await report(system).device
        #expect(device.name == HeartRateScenario.advertisedName)
        #expect(device.uuids.contains("180D") && device.uuids.contains("180F"), "\(device.uuids)")
    }

    @Test(arguments: LabScenario.boundingSystems) func theDeclaredServicesAndCharacteristicsAreThereWithTheirFlags(
        system: LabSystem
    ) async throws {
        let report = try await report(system)
        let services = Set(report.services.map(\.uuid))
        #expect(services.isSuperset(of: ["180D", "180F", "180A"]), "\(services)")
        let flags = Dictionary(report.characteristics.map { ($0.uuid, $0.flags) }, uniquingKeysWith: { a, _ in a })
        #expect(flags["2A37"] == ["notify"])
        #expect(flags["2A38"] == ["read"])
        #expect(flags["2A39"] == ["write"])
        #expect(flags["2A19"] == ["read", "notify"])
        for uuid in ["2A29", "2A24", "2A25", "2A27", "2A26", "2A28"] { #expect(flags[uuid] == ["read"], "\(uuid)") }
    }

    @Test(arguments: LabScenario.boundingSystems) func bodySensorLocationReadsAsChest(system: LabSystem) async throws {
        let location = try #require(try await report(system).characteristics.first { $0.uuid == "2A38" })
        #expect(location.read?.value?.hex == "01")
        #expect(location.read?.value?.decoded == "Chest")
    }

    /// A unittest suite the scenario ran in the VM (`<name>.txt`, `<name>-rc`) exited 0 after `tests` tests, OK.
    private func expectPassed(
        _ run: LabRun, _ name: String, tests: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let output = (try? String(contentsOfFile: run.file(name + ".txt"), encoding: .utf8)) ?? ""
        let status = (try? String(contentsOfFile: run.file(name + "-rc"), encoding: .utf8)) ?? ""
        #expect(
            status.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(output)", sourceLocation: sourceLocation)
        #expect(
            output.contains("Ran \(tests) tests") && output.hasSuffix("OK\n"), "\(output)",
            sourceLocation: sourceLocation)
    }

    @Test(arguments: LabScenario.boundingSystems) func theReadmesCentralSideTestSuitePassesAgainstTheProfile(
        system: LabSystem
    ) async throws {
        let run = try await HeartRateScenario.shared.run(on: system)
        expectPassed(run, "central-tests", tests: 5)
    }

    /// bleak connects unmodified. Before the lab's radio took a connection interval over the feature
    /// exchange, bluetoothd never signalled `Connected` and bleak failed every test with "failed to discover
    /// services, device disconnected"; before the lab chose bleak's default adapter, half the runs scanned from
    /// the strap's own controller and found nothing.
    @Test(arguments: LabScenario.boundingSystems) func anUnmodifiedBleakSuiteConnectsReadsWritesAndGetsNotifications(
        system: LabSystem
    ) async throws {
        let run = try await HeartRateScenario.shared.run(on: system)
        expectPassed(run, "bleak-tests", tests: 6)
        let log = try String(contentsOfFile: run.file("bluetoothd.log"), encoding: .utf8)
        #expect(!log.contains("is already connected"), "bluetoothd saw an ATT connection before its link")
    }

    /// The command writes beside its sources; the write is kept in the results and the checkout is
    /// untouched.
    @Test(arguments: LabScenario.boundingSystems) func theWorkingDirectoryIsWritableAndTheCheckoutUnchanged(
        system: LabSystem
    ) async throws {
        let run = try await HeartRateScenario.shared.run(on: system)
        #expect(!FileManager.default.fileExists(atPath: run.file("workdir-failed")))
        let copied = try String(
            contentsOfFile: run.file("workdir/" + HeartRateScenario.writableCheck), encoding: .utf8)
        #expect(copied == "written in the lab\n")
        #expect(!FileManager.default.fileExists(atPath: LabScenario.package + "/" + HeartRateScenario.writableCheck))
    }

    /// summary.json says what the peripheral itself counted after three centrals came and went.
    @Test(arguments: LabScenario.boundingSystems) func theSummaryHasThePeripheralsOwnCountsWithEveryRequestAnswered(
        system: LabSystem
    ) async throws {
        let run = try await HeartRateScenario.shared.run(on: system)
        let data = try Data(contentsOf: URL(fileURLWithPath: run.file(LabSummary.file)))
        let summary = try JSONDecoder().decode(LabSummary.self, from: data)
        #expect(summary.bluezVersion == system.bluez.version && summary.exitCode == run.exitCode)
        let strap = try #require(summary.peripherals.first)
        #expect(strap.controller == "hci0" && strap.profile.hasSuffix(HeartRateScenario.profile))
        #expect((strap.requests ?? 0) >= 10, "the probe, python-dbus and bleak suites read and write")
        #expect(strap.unanswered == 0)
        #expect((strap.notificationsSent ?? 0) >= 6)
    }

    @Test(arguments: LabScenario.boundingSystems) func heartRateMeasurementNotifiesWhileTheProbeListens(
        system: LabSystem
    ) async throws {
        let measurement = try #require(try await report(system).characteristics.first { $0.uuid == "2A37" })
        #expect(measurement.subscribeError == nil)
        #expect(!measurement.notifications.isEmpty)
        #expect(measurement.notifications.first?.decoded?.contains("bpm") == true)
    }
}
