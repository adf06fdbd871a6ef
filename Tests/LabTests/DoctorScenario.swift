import Foundation

@testable import Lab

/// One boot per system in which `blemu doctor --json` checks a healthy adapter, then a guest broken on purpose one
/// way at a time (powered off, rfkill-blocked, missing, DeviceID left on, every advertising instance held by another
/// program, a user other than root with and without the bus policy, bluetoothd stopped). The guest script is
/// Fixtures/lab-doctor.sh; the tests read each run's JSON.
enum DoctorScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        return try await LabScenario.bootScripted(
            in: results, controllers: 3, timeout: .seconds(360), on: system,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-doctor.sh", LabScenario.blemuExecutable, LabScenario.fixtures,
            ])
    }
}
