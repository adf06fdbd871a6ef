import Foundation

@testable import Lab

/// One boot in which the real `blemu run` serves Fixtures/lab-att.yaml on hci0 and two centrals that bypass
/// bluetoothd's client API drive it from hci1 with raw ATT and handles: gatttool (Debian's bluez) and
/// Fixtures/lab-att-client.py, for the Read Blob offsets and reliable writes gatttool cannot send. The guest script,
/// Fixtures/lab-att.sh, leaves one file per request; `ATTScenarioTests` asserts on them and on btmon's trace.
enum ATTScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(length: .long, boot: boot)

    /// The 60-byte initial value of `long`: longer than ATT_MTU-1 at the default MTU of 23.
    static let longInitial = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX".utf8)
    /// The 512-byte value of `big`, as the fixture's header defines it.
    static let bigValue = (0..<512).map { UInt8(truncatingIfNeeded: $0 * 31 + $0 / 256) }
    /// The 16 bytes of the plain write and the 50 bytes of the prepared write (guest script).
    static let plainWrite = (0..<16).map { UInt8($0) }
    static let preparedWrite = (100..<150).map { UInt8($0) }

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(420), on: system,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-att.sh", LabScenario.blemuExecutable, LabScenario.fixtures,
            ])
    }
}
