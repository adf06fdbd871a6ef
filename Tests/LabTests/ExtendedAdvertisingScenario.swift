import Foundation

@testable import Lab

/// One boot per BlueZ in which the real `blemu run` serves Fixtures/lab-extended.yaml (152 bytes of extended
/// advertising data) on hci0 of two dual-mode controllers, and btmgmt scans from hci1: btvirt's dual-mode
/// controller is Bluetooth 5.2 with LE Extended Advertising, the LE-only one the other scenarios use is not (its
/// MaxAdvLen is 31). The guest script is Fixtures/lab-extended.sh; the tests read btmon's capture and blemu's exit.
enum ExtendedAdvertisingScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The profile the scenario serves.
    static let profile = LabScenario.fixtures + "/lab-extended.yaml"

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(180), on: system, dualMode: true,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-extended.sh", LabScenario.blemuExecutable, LabScenario.fixtures,
            ])
    }
}
