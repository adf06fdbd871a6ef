import BlueZTesting
import Foundation
import Testing

/// The real `blemu doctor` process against the fake bluetoothd on a private bus: a healthy adapter passes with its
/// trial registered and unregistered, a missing or unpowered one fails with its fix and exit 69. (DoctorScenario
/// checks the same on real bluetoothd, with more ways to break it.)
@Suite(
    .enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: ChildProcess.blemu), "needs the built blemu"),
    .serialized, .timeLimit(.minutes(2)))
struct DoctorOnFakeBluetoothdTests {
    /// `blemu doctor --json` on `bus` with `arguments`: its exit status and its checks by id.
    private func doctor(
        on bus: PrivateBus, _ arguments: [String]
    ) async throws -> (status: Int32, verdict: String?, checks: [String: [String: Any]]) {
        let directory = "/tmp/blemu-doctor-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The lab's settings: no Device Information of bluetoothd's, one ATT channel.
        try "[General]\nDeviceID = false\n[GATT]\nChannels = 1\n".write(
            toFile: directory + "/main.conf", atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            ChildProcess.blemu,
            ["doctor", "--bus", bus.address, "--json", "--main-conf", directory + "/main.conf"] + arguments,
            outputIn: directory)
        let status = await process.exitStatus()
        let object = (try? JSONSerialization.jsonObject(with: Data(process.stdout.utf8))) as? [String: Any] ?? [:]
        let checks = (object["checks"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) {
            $0[$1["id"] as? String ?? ""] = $1
        }
        #expect(!checks.isEmpty, "\(process.stdout)\n\(process.stderr)")
        return (status, object["verdict"] as? String, checks)
    }

    @Test func aHealthyAdapterPassesAndTheTrialRegistersAndUnregisters() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address)
        let (status, verdict, checks) = try await doctor(on: bus, [])
        // The fake is no program named bluetoothd, so its version is unknown (never asked of the test process):
        // the known-crash check is skipped, and the host's own kernel may be a bad pair with an unknown version.
        #expect(status == 0 && verdict != "fail", "\(checks)")
        #expect((checks["bluetoothd"]?["detail"] as? String)?.hasPrefix("bluetoothd (version unknown) owns") == true)
        #expect(checks["bluetoothd-known-crash"]?["status"] as? String == "skip")
        for (id, check) in checks where !["kernel-bluez-pair", "bluetoothd-known-crash"].contains(id) {
            #expect(check["status"] as? String == "ok", "\(id): \(check)")
        }
        #expect(
            checks["trial"]?["detail"] as? String
                == "RegisterApplication ok, RegisterAdvertisement ok, UnregisterAdvertisement ok, UnregisterApplication ok"
        )
        let registrations = (await fake.registrationCount, await fake.advertisementRegistrations)
        #expect(registrations == (1, 1))
        let left = (await fake.advertisements.count, await fake.applications.count)
        #expect(left == (0, 0), "the trial left nothing behind")
        await fake.stop()
    }

    @Test func aMissingOrUnpoweredAdapterFailsWithWhatToDo() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address)
        let missing = try await doctor(on: bus, ["--adapter", "hci7"])
        #expect(missing.status == 69 && missing.verdict == "fail")
        #expect(missing.checks["adapter"]?["detail"] as? String == "no hci7: the adapters here are hci0")
        #expect(missing.checks["adapter"]?["fix"] as? String == "use --adapter hci0")
        await fake.setPowered(false)
        let off = try await doctor(on: bus, [])
        #expect(off.status == 69 && off.checks["adapter-powered"]?["status"] as? String == "fail")
        #expect(off.checks["trial"]?["status"] as? String == "skip")
        await fake.stop()
    }

    @Test func noBluetoothdOnTheBusSaysHowToStartIt() async throws {
        let bus = try PrivateBus()
        let (status, _, checks) = try await doctor(on: bus, [])
        #expect(status == 69 && checks["bluetoothd"]?["status"] as? String == "fail")
        #expect((checks["bluetoothd"]?["fix"] as? String)?.hasPrefix("sudo systemctl start bluetooth") == true)
        #expect(checks["adapter"]?["status"] as? String == "skip")
    }

    /// `blemu run`'s one-line error for a refused advertisement names the cause the doctor would: here every
    /// instance is taken (the fake holds none free, as 5.66 answers once `max_ads` are registered).
    @Test func blemuRunSaysWhyItsAdvertisementWasRefused() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address, maximumAdvertisements: 0)
        let directory = "/tmp/blemu-doctor-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try ChildProcess(
            ChildProcess.blemu, ["run", ChildProcess.repositoryRoot + "/profiles/battery.yaml", "--bus", bus.address],
            outputIn: directory)
        #expect(await run.exitStatus() == 69)
        let line = run.stderr.split(separator: "\n").first { $0.contains("RegisterAdvertisement") } ?? ""
        #expect(
            line.hasSuffix(
                "Maximum advertisements reached; every advertising instance of hci0 is taken by another program: "
                    + "stop the other advertisers (another blemu run, bluetoothctl's advertise on)"), "\(run.stderr)")
        await fake.stop()
    }
}
