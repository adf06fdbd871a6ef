import Foundation

@testable import Lab

/// The second (and last) boot: the real `blemu run` serving profiles/heart-rate.yaml on hci0 and `blemu probe
/// --json` as the command on hci1 (Fixtures/lab-heart-rate.sh), which is what a phone would see.
enum HeartRateScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The profile under test, relative to the checkout.
    static let profile = "profiles/heart-rate.yaml"
    /// The name the scan must see: what `blemu adv` predicts ("Polar H10 A1B2" whole, `scan-response: full`), so
    /// the lab checks the planner's prediction, not a copy of it.
    static let advertisedName: String = {
        let plan = try? JSONSerialization.jsonObject(
            with: LabScenario.blemu(["adv", "--json", LabScenario.package + "/" + profile]))
        return (plan as? [String: Any])?["localName"] as? String ?? ""
    }()
    /// The README's worked example: a user's central-side unittest suite for this profile.
    static let centralTests = LabScenario.package + "/examples/central-tests/heart_rate_test.py"
    /// The same suite written with bleak, run unmodified by the venv scripts/setup --lab makes.
    static let bleakTests = LabScenario.package + "/examples/central-tests/heart_rate_bleak_test.py"
    /// The venv's interpreter: `<cache>/venv/bin/python` next to the BlueZ builds (scripts/setup).
    static let bleakPython =
        LabCache.root() + "/venv/bin/python"
    /// A file the command writes by relative path in its working directory (which used to be read-only).
    static let writableCheck = "lab-writable-check.txt"
    /// How long the probe listens: the profile notifies Heart Rate Measurement once a second.
    static let listenSeconds = 3

    /// Whether the built blemu has a `run` subcommand (another branch adds it): `blemu run --help` exits 0 and
    /// shows run's own usage. The exit code alone is not enough: ArgumentParser answers `--help` after an unknown
    /// word with the top-level help and exit 0.
    static let blemuCanRun: Bool = {
        guard let help = try? ChildProcess.run([LabScenario.blemuExecutable, "run", "--help"]) else { return false }
        return help.status == 0 && help.output.contains("USAGE: blemu run")
    }()

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: 2, profiles: [LabScenario.package + "/" + profile],
            timeout: .seconds(300), stepTimeout: .seconds(30), blemuExecutable: LabScenario.blemuExecutable,
            workingDirectory: LabScenario.package, bluez: system.bluez, kernel: system.kernel)
        return try await LabScenario.boot(
            configuration,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-heart-rate.sh", LabScenario.blemuExecutable, advertisedName,
                String(listenSeconds), writableCheck, centralTests, bleakPython, bleakTests,
            ])
    }
}
