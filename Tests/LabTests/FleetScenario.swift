import Foundation

@testable import Lab

/// One boot per BlueZ with a fleet: profiles/heart-rate.yaml served by the lab's stack on four controllers (each copy
/// named apart, `ProfileCopies`), and examples/central-tests/gateway_test.py on the fifth holding a connection to
/// every strap at once through bleak.
enum FleetScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// How many straps the fleet has.
    static let devices = 4
    /// The profile every strap serves, relative to the checkout.
    static let profile = "profiles/heart-rate.yaml"
    /// The gateway example of docs/lab.md ("A fleet").
    static let gateway = LabScenario.package + "/examples/central-tests/gateway_test.py"

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: devices + 1,
            profiles: Array(repeating: LabScenario.package + "/" + profile, count: devices), timeout: .seconds(300),
            // The default step bound (60 s): four devices registering at once under TCG took 34 s once with a
            // package build beside the VM, as CI has one.
            blemuExecutable: LabScenario.blemuExecutable,
            workingDirectory: LabScenario.package, bluez: system.bluez, kernel: system.kernel)
        return try await LabScenario.boot(
            configuration, running: [HeartRateScenario.bleakPython, gateway, String(devices)])
    }
}
