import Foundation

@testable import Lab

/// One boot per BlueZ in which every bundled profile is served by the real `blemu run` on hci0, cloned from hci1
/// with `blemu clone`, and the clone served and probed in its turn (Fixtures/lab-clone.sh). The tests compare the
/// report the clone was made from with the probe of the clone (probe of the original == probe of the
/// clone, apart from what bluetoothd adds itself).
enum CloneScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The bundled profiles, by path, sorted.
    static let profiles: [String] = {
        let directory = LabScenario.package + "/profiles"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().map { directory + "/" + $0 }
    }()

    /// The profile cloned with `--record`, and for how long (seconds): heart-rate notifies once a second from the
    /// first subscription, so 4 s records 3 or 4 measurements, and the clone's probe listens as long.
    static let recorded = (name: "heart-rate", seconds: 4)

    /// The profile cloned with `--pair --passkey`, and the passkey its `pairing` section types (profiles/secure.yaml).
    static let paired = (name: "secure", passkey: "246810")

    /// The profile `blemu verify` checks live while it is served, and the one promise its variant changes: the
    /// body sensor location (a constant) says wrist where the device says chest.
    static let verified = (
        name: "heart-rate", original: #"value: { hex: "01" }"#, variant: #"value: { hex: "02" }"#,
        failure: "value body-sensor-location value"
    )

    private static func boot(system: LabSystem) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        let verifiedPath = LabScenario.package + "/profiles/\(verified.name).yaml"
        let text = try String(contentsOfFile: verifiedPath, encoding: .utf8)
        let variant = results + "/\(verified.name)-variant.yaml"
        try text.replacingOccurrences(of: verified.original, with: verified.variant)
            .write(toFile: variant, atomically: true, encoding: .utf8)
        let arguments = profiles.map { path in
            if path.hasSuffix("/\(recorded.name).yaml") { return path + "|\(recorded.seconds)s" }
            if path.hasSuffix("/\(paired.name).yaml") { return path + "||\(paired.passkey)" }
            return path
        }
        // Eight profiles served, cloned, served again and probed, then the bad cases: about 370 s under TCG on 2
        // cores with BlueZ 5.66, 430 s with 5.82 and 490 s with 5.87, whose central takes longer to resolve
        // (2026-11-27), and more beside another suite's VM: the limit only has to catch a hang.
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(900), on: system,
            running: [
                "/bin/sh", LabScenario.fixtures + "/lab-clone.sh", LabScenario.blemuExecutable,
                LabScenario.fixtures + "/lab-clone-drop.yaml", verifiedPath, variant,
            ] + arguments)
    }
}
