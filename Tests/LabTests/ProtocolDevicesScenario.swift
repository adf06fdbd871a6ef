import Foundation
import Testing

@testable import Lab

/// The bundled devices whose conversation is a protocol, served by the real `blemu run` on hci0 to hci4 in one
/// boot, each driven from hci5 by a central nobody here wrote or one written from its specification's text
/// (Fixtures/lab-protocol-devices.sh runs them in turn):
/// - profiles/indoor-bike.yaml (FTMS) by pycycling's FitnessMachineService, through a whole ERG session;
/// - profiles/glucose-meter.yaml (GLS with RACP) by examples/central-tests/glucose_racp_test.py, written from GLS
///   1.0's text: every RACP procedure, records before the indication that ends it;
/// - profiles/nordic-uart.yaml (a NUS loopback) by examples/central-tests/nordic_uart_echo_test.py over bleak: lines,
///   a burst without response and an MTU-long write echoed whole and in order;
/// - profiles/cycling-speed-cadence.yaml (CSCS) by pycycling's CyclingSpeedCadenceService for its measurements and
///   features, and examples/central-tests/csc_control_point_test.py, written from CSCS 1.0's text, for its SC
///   Control Point: Set Cumulative Value and the count going on from it, the sensor locations, the refusals;
/// - examples/vendor-lamp/lamp.yaml, its CRC-framed protocol answered by its Python handler (`on_write`), attached by
///   examples/central-tests/vendor_lamp_test.py itself before it drives the lamp over bleak.
///
/// Before the centrals, `blemu verify --writes` makes the sensor's declared SC Control Point exchanges against it,
/// then again with one wrong answer planted by a handler, which it must find alone.
enum ProtocolDevicesScenario {
    /// A device: its profile, and the central that judges it with a line per check.
    struct Device: Sendable, CustomTestStringConvertible {
        /// The results' file stem.
        let name: String
        /// The profile, relative to the checkout.
        let profile: String
        /// The central's script, relative to the checkout.
        let central: String
        /// The checks the central makes, each an `ok` line when it holds.
        let checks: Int

        var testDescription: String { name }
    }

    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The devices, in the order their profiles take the controllers.
    static let devices = [
        Device(
            name: "trainer", profile: "profiles/indoor-bike.yaml",
            central: "examples/central-tests/ftms_pycycling_test.py", checks: 14),
        Device(
            name: "glucose", profile: "profiles/glucose-meter.yaml",
            central: "examples/central-tests/glucose_racp_test.py", checks: 15),
        Device(
            name: "uart", profile: "profiles/nordic-uart.yaml",
            central: "examples/central-tests/nordic_uart_echo_test.py", checks: 5),
        Device(
            name: "csc", profile: "profiles/cycling-speed-cadence.yaml",
            central: "examples/central-tests/csc_control_point_test.py", checks: 10),
        Device(
            name: "lamp", profile: "examples/vendor-lamp/lamp.yaml",
            central: "examples/central-tests/vendor_lamp_test.py", checks: 11),
    ]

    /// The device `blemu verify --writes` checks against its profile before the centrals run, then again with a
    /// handler (Fixtures/csc_firmware_defect.py) planting one wrong answer on its control point.
    static let verified = devices[3]

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: devices.count + 1,
            profiles: devices.map { LabScenario.package + "/" + $0.profile }, timeout: .seconds(420),
            stepTimeout: .seconds(30), blemuExecutable: LabScenario.blemuExecutable,
            workingDirectory: LabScenario.package, bluez: system.bluez, kernel: system.kernel)
        return try await LabScenario.boot(
            configuration,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-protocol-devices.sh", HeartRateScenario.bleakPython,
                LabScenario.blemuExecutable, verified.name, LabScenario.package + "/" + verified.profile,
                LabScenario.fixtures + "/csc_firmware_defect.py",
            ] + devices.map { "\($0.name)=\(LabScenario.package)/\($0.central)" })
    }
}
