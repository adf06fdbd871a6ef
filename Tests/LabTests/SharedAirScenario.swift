import Foundation

@testable import Lab

/// One boot of three VMs on RootCanal's one air: the central on the newest system (kernel 7.2, BlueZ 5.87), and the
/// peripherals in two VMs of their own on Debian 12's (kernel 6.1, BlueZ 5.66), two heart-rate straps in one and
/// the thermostat in the other (`--peripheral-system debian-12 --devices-per-vm 2`). The command,
/// Fixtures/lab-shared-air.sh, pairs with the thermostat and verifies it with writes (read, write, subscribe) and
/// holds both straps with the gateway example.
enum SharedAirScenario {
    /// Boots on first use; the one run every test awaits.
    static let shared = LabScenario(length: .long, boot: boot)

    /// The central's system and the peripherals'.
    static let centralSystem = "current"
    static let peripheralSystem = "debian-12"

    /// Whether this machine has both systems and RootCanal.
    static let isAvailable =
        LabScenario.isAvailable && LabScenario.rootCanalIsInstalled
        && (try? LabSystem.resolve(centralSystem)) != nil && (try? LabSystem.resolve(peripheralSystem)) != nil

    /// The profiles in controller order on the air: two straps, then the thermostat.
    static let profiles = [
        LabScenario.package + "/profiles/heart-rate.yaml", LabScenario.package + "/profiles/heart-rate.yaml",
        LabScenario.package + "/profiles/thermostat.yaml",
    ]

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        var configuration = LabConfiguration(
            resultsDirectory: results, controllers: profiles.count + 1, profiles: profiles, timeout: .seconds(600),
            stepTimeout: .seconds(90), blemuExecutable: LabScenario.blemuExecutable,
            workingDirectory: LabScenario.package, bluez: system.bluez, kernel: system.kernel)
        configuration.devicesPerMachine = 2
        configuration.peripheralSystem = try LabSystem.resolve(peripheralSystem)
        return try await LabScenario.$radio.withValue(.rootcanal) {
            try await LabScenario.boot(
                configuration,
                running: [
                    "/bin/sh", LabScenario.fixtures + "/lab-shared-air.sh", LabScenario.blemuExecutable, profiles[2],
                    HeartRateScenario.bleakPython, FleetScenario.gateway,
                ])
        }
    }
}
