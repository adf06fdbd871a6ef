import Foundation

@testable import Lab

/// One boot for the peripheral's life around bluetoothd, told with the real `blemu run` on hci0 and a python3-dbus
/// central on hci1 (Fixtures/lifecycle_central.py) by a guest script (Fixtures/lab-lifecycle.sh) that leaves its
/// evidence in the results directory:
///
/// 1. the central finds, connects and reads (the baseline);
/// 2. bluetoothd is killed and started again with its own command line: blemu must notice, register everything
///    again and say so, and the central must find and read it again;
/// 3. hci0 is powered off and on with btmgmt: blemu must report both changes and advertise again;
/// 4. the central reads `hang-up`, whose first read fires the profile's `disconnect` fault: the central's
///    Device1.Connected must go false without the central asking;
/// 5. a central subscribes to `beat` and stays; blemu is killed with SIGKILL and started again with the same
///    `--restore-id`: is the central still connected, is it subscribed to the new run, does a value reach it?
///
/// Before each read the central removes its device object, so finding the peripheral again needs a fresh
/// advertisement, not bluetoothd's cache.
enum LifecycleScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The profile the script runs.
    static let profile = LabScenario.fixtures + "/lab-lifecycle.yaml"
    /// The marker's value as the central prints it (u16 0xBEEF, little endian, uppercase hex).
    static let markerHex = "EFBE"
    /// The reads the central makes, one result file each, in order (as lab-lifecycle.sh names them).
    static let reads = ["central-1.txt", "central-2-after-restart.txt", "central-3-after-power-cycle.txt"]
    /// The restore identifier both `blemu run`s share (the second one reports the saved subscription).
    static let restoreID = "lab-lifecycle"

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        // No profiles for the stack to start: the script runs blemu itself on hci0.
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(240), on: system,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-lifecycle.sh", LabScenario.blemuExecutable, profile, restoreID,
            ])
    }
}
