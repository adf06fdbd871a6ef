import Foundation

@testable import Lab

/// The bundled trainer (profiles/indoor-bike.yaml) served by the real `blemu run` on hci0, driven on hci1 by
/// examples/central-tests/ftms_pycycling_test.py: pycycling's FitnessMachineService, a client nobody here wrote,
/// through a whole ERG session (control, target power, the power following it, start, pause, reset, refusals).
enum TrainerScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The profile under test, relative to the checkout.
    static let profile = "profiles/indoor-bike.yaml"
    /// The central: one ordered session over one connection, a line per check.
    static let central = LabScenario.package + "/examples/central-tests/ftms_pycycling_test.py"
    /// The checks the session makes, each an `ok` line when it holds.
    static let checks = 14

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: 2, profiles: [LabScenario.package + "/" + profile],
            timeout: .seconds(240), stepTimeout: .seconds(30), blemuExecutable: LabScenario.blemuExecutable,
            workingDirectory: LabScenario.package, bluez: system.bluez, kernel: system.kernel)
        return try await LabScenario.boot(configuration, running: [HeartRateScenario.bleakPython, central])
    }
}
