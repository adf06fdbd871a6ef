import Foundation

@testable import Lab

/// One boot for two stories told with the real `blemu run` on hci0 and centrals on hci1, by a guest script
/// (Fixtures/lab-thermostat.sh, with Fixtures/thermostat_central.py) that drives every process itself and leaves
/// its evidence in the results directory:
///
/// 1. a thermostat steered through `blemu ctl` while `blemu probe --listen` watches its temperature;
/// 2. a set point written by a python3-dbus central, `kill -9` of blemu, a restart with the same `--restore-id`,
///    and the central reading the set point back.
///
/// It runs Fixtures/lab-thermostat.yaml, not profiles/thermostat.yaml: that profile's set point needs encryption
/// to write, and its schedules notify temperatures of their own (the fixture's header says more).
enum ThermostatScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The profile both stories run.
    static let profile = LabScenario.fixtures + "/lab-thermostat.yaml"
    /// The restore identifier both `blemu run`s share.
    static let restoreID = "lab-thermostat"
    /// Temperatures set through `blemu ctl`, in centidegrees, in order.
    static let temperatures = [2300, 2450, 2275]
    /// The set point the profile starts with (21.00 °C) and the one the central writes (24.00 °C), s16 LE hex.
    static let initialSetPoint = "3408"
    static let writtenSetPoint = "6009"
    /// How long the probe listens after subscribing: room for three `blemu ctl` processes under TCG, each of
    /// which took 3-5 s on a loaded 2-core host (6 s was seen to miss the third value).
    static let listenSeconds = 12
    /// `value` as the temperature characteristic carries it: s16, little endian, uppercase hex (the probe's
    /// spelling).
    static func hex(centidegrees value: Int) -> String {
        let bits = UInt16(bitPattern: Int16(value))
        return String(format: "%02X%02X", bits & 0xFF, bits >> 8)
    }

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        // No profiles for the stack to start: the script runs blemu itself on hci0, twice.
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(180), on: system,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-thermostat.sh", LabScenario.blemuExecutable, profile, restoreID,
                String(listenSeconds), writtenSetPoint,
            ] + temperatures.map(String.init))
    }
}
