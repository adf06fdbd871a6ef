import Foundation

@testable import Lab

/// One boot for pairing as a central really meets it, told with the real `blemu run` on hci0 and a
/// keyboard-only python3-dbus central on hci1 that pairs through `Device1.Pair` with an agent of its own, so the
/// central's side is asked there and the peripheral's side is asked blemu's agent (docs/bluez.md, "Pairing"). The
/// guest script is Fixtures/lab-pairing.sh and the central Fixtures/pairing_central.py:
///
/// 1. profiles/secure.yaml (keyboard-only, a fixed passkey): the central types a wrong passkey and the pairing
///    fails; then it types the profile's passkey, pairs, reads the encrypted email and writes the status that
///    needs an authenticated link;
/// 2. Fixtures/lab-pairing-display.yaml (display-only): the kernel picks the passkey, blemu shows it in its event
///    log and `blemu ctl pairing`, and the central types what it reads there, then reads the authenticated code.
enum PairingScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The bundled profile with a fixed passkey, and the display-only fixture.
    static let secureProfile = LabScenario.package + "/profiles/secure.yaml"
    static let displayProfile = LabScenario.fixtures + "/lab-pairing-display.yaml"

    /// secure.yaml's passkey as `blemu show --json` reports it (not a copy of the profile's); empty when blemu
    /// cannot say.
    static let passkey: String = {
        let show = try? JSONSerialization.jsonObject(with: LabScenario.blemu(["show", "--json", secureProfile]))
        return ((show as? [String: Any])?["pairing"] as? [String: Any])?["passkey"] as? String ?? ""
    }()
    /// A passkey that is not the profile's.
    static var wrongPasskey: String { passkey == "000000" ? "111111" : "000000" }

    /// What the central writes to secure.yaml's `status`, and the values it reads, as hex.
    static let writtenStatus = "Busy"
    static let email = "ada@example.com"
    static let code = "open sesame"

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        // No profiles for the stack to start: the script runs blemu itself on hci0, once per profile.
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(240), on: system,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-pairing.sh", LabScenario.blemuExecutable, secureProfile,
                passkey, wrongPasskey, displayProfile,
            ])
    }

    /// `text`'s UTF-8 bytes as the central spells values: uppercase hex, no separator.
    static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02X", $0) }.joined() }
}
