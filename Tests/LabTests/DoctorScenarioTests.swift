import Foundation
import Testing

@testable import Lab

/// `blemu doctor` on real bluetoothd: a healthy adapter passes, and each way the guest is broken is named with its
/// fix, by a stable id, with exit 69 for a failure.
@Suite(.needsLab, .needsBlemuRun, .labSuiteTimeLimit)
struct DoctorScenarioTests {
    /// One doctor run: its exit code and its checks by id.
    private struct Report {
        var exitCode: Int32?
        var verdict: String?
        var checks: [String: [String: Any]]

        func status(_ id: String) -> String? { checks[id]?["status"] as? String }
        func detail(_ id: String) -> String { checks[id]?["detail"] as? String ?? "" }
        func fix(_ id: String) -> String { checks[id]?["fix"] as? String ?? "" }
    }

    private func report(_ name: String, on system: LabSystem) async throws -> Report {
        let run = try await DoctorScenario.shared.run(on: system)
        let failure = (try? String(contentsOfFile: run.file("scenario-failure"), encoding: .utf8)) ?? ""
        #expect(failure.isEmpty, "the scenario failed: \(failure)\n\(tails(run, ["command.log"]))")
        let text = (try? String(contentsOfFile: run.file("doctor-\(name).json"), encoding: .utf8)) ?? ""
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        let checks = (object["checks"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) {
            $0[$1["id"] as? String ?? ""] = $1
        }
        let rc = (try? String(contentsOfFile: run.file("doctor-\(name).rc"), encoding: .utf8))
            .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(!checks.isEmpty, "doctor-\(name): \(text)\n\(tails(run, ["doctor-\(name).err"]))")
        return Report(exitCode: rc, verdict: object["verdict"] as? String, checks: checks)
    }

    @Test(arguments: LabScenario.boundingSystems) func aHealthyAdapterPassesEveryCheckAndTheTrial(
        system: LabSystem
    ) async throws {
        let healthy = try await report("healthy", on: system)
        // 5.87 crashes when a local central filters discovery by UUID: the one warning a healthy 5.87 host gets.
        let crashes = system.bluez.version == "5.87"
        #expect(healthy.exitCode == 0 && healthy.verdict == (crashes ? "warn" : "ok"), "\(healthy.checks)")
        #expect(healthy.status("bluetoothd-known-crash") == (crashes ? "warn" : "ok"))
        for (id, check) in healthy.checks where id != "bluetoothd-known-crash" {
            #expect(check["status"] as? String == "ok", "\(id): \(check)")
        }
        #expect(healthy.detail("bluetoothd").contains("bluetoothd \(system.bluez.version) owns org.bluez"))
        #expect(healthy.detail("kernel") == "kernel \(system.kernel.release)")
        #expect(
            healthy.detail("trial")
                == "RegisterApplication ok, RegisterAdvertisement ok, UnregisterAdvertisement ok, "
                + "UnregisterApplication ok")
        #expect(healthy.checks.keys.contains("rfkill") && healthy.checks.keys.contains("main-conf-device-id"))
    }

    @Test(arguments: LabScenario.boundingSystems) func aPoweredOffOrBlockedAdapterIsNamedWithWhatToDo(
        system: LabSystem
    ) async throws {
        let off = try await report("powered-off", on: system)
        #expect(off.exitCode == 69 && off.verdict == "fail")
        #expect(off.status("adapter-powered") == "fail" && off.fix("adapter-powered").contains("bluetoothctl power on"))
        let blocked = try await report("rfkill-blocked", on: system)
        #expect(blocked.exitCode == 69)
        #expect(blocked.status("rfkill") == "fail" && blocked.detail("rfkill").contains("soft-blocked"))
        #expect(blocked.fix("rfkill") == "rfkill unblock bluetooth")
        #expect(blocked.fix("adapter-powered").hasPrefix("unblock it first"))
    }

    @Test(arguments: LabScenario.boundingSystems) func aMissingAdapterListsTheOnesThere(system: LabSystem) async throws
    {
        let missing = try await report("missing", on: system)
        #expect(missing.exitCode == 69)
        #expect(missing.detail("adapter") == "no hci9: the adapters here are hci0, hci1, hci2")
        #expect(missing.fix("adapter") == "use --adapter hci0")
        #expect(missing.status("adapter-powered") == "skip")
    }

    @Test(arguments: LabScenario.boundingSystems) func deviceIDLeftOnIsAWarningThatSaysCentralsSeeTwoDeviceInformations(
        system: LabSystem
    ) async throws {
        let deviceID = try await report("device-id", on: system)
        #expect(deviceID.exitCode == 0 && deviceID.verdict == "warn")
        #expect(deviceID.status("main-conf-device-id") == "warn")
        #expect(deviceID.fix("main-conf-device-id").contains("DeviceID = false"))
    }

    @Test(arguments: LabScenario.boundingSystems) func anotherProgramHoldingEveryInstanceFailsAndSkipsTheTrial(
        system: LabSystem
    ) async throws {
        let taken = try await report("instances-taken", on: system)
        #expect(taken.exitCode == 69)
        #expect(taken.status("advertising-instances") == "fail", "\(taken.detail("advertising-instances"))")
        #expect(taken.fix("advertising-instances").contains("stop the other advertisers"))
        #expect(taken.status("trial") == "skip")
    }

    @Test(arguments: LabScenario.boundingSystems) func aUserOtherThanRootIsToldWhichGroupTheBusPolicyNames(
        system: LabSystem
    ) async throws {
        // Debian's policy lets every user send to org.bluez; one that lets only root and a group refuses them.
        let allowed = try await report("not-root", on: system)
        #expect(allowed.status("bus-policy") == "ok" && allowed.detail("bus-policy").contains("every user"))
        // nobody runs the system's bluetoothd for its version, but cannot run a build under /root/.cache: then the
        // version is unknown, never another bluetoothd's.
        let version = system.bluez.toolDirectory == nil ? system.bluez.version : "(version unknown)"
        #expect(allowed.detail("bluetoothd").hasPrefix("bluetoothd \(version) owns"), "\(allowed.detail("bluetoothd"))")
        let refused = try await report("not-root-refused", on: system)
        #expect(refused.exitCode == 69 && refused.status("bus-policy") == "fail", "\(refused.checks)")
        #expect(refused.detail("bus-policy").contains("org.freedesktop.DBus.Error.AccessDenied"))
        #expect(refused.fix("bus-policy").hasPrefix("sudo usermod -aG bluetooth $USER"))
    }

    @Test(arguments: LabScenario.boundingSystems) func aStoppedBluetoothdSaysHowToStartIt(
        system: LabSystem
    ) async throws {
        let stopped = try await report("bluetoothd-stopped", on: system)
        #expect(stopped.exitCode == 69 && stopped.status("bluetoothd") == "fail")
        #expect(stopped.fix("bluetoothd").hasPrefix("sudo systemctl start bluetooth"))
        #expect(stopped.status("trial") == "skip")
    }
}
