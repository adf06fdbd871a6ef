import Foundation
import Testing

/// `blemu lab run --radio ...`: what is refused before anything boots, and how (docs/lab.md, "RootCanal's air").
struct LabRadioCommandTests {
    @Test func rootCanalMissingExits69WithTheCommandThatInstallsIt() async throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("blemu-cache-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let outcome = try await BlemuProcess.run(
            ["lab", "run", "--radio", "rootcanal", "--", "true"], environment: ["BLEMU_CACHE": cache])
        #expect(outcome.status == 69, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("\(cache)/venv/bin/pip install rootcanal==1.10.0"), "\(outcome.stderr)")
    }

    @Test func aFleetPastBtvirtsControllersIsSentToRootCanal() async throws {
        let outcome = try await BlemuProcess.run(
            ["lab", "run", "--profile", "profiles/heart-rate.yaml", "--copies", "16", "--", "true"])
        #expect(outcome.status == 64, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("--copies must be 1...15 on btvirt, got 16"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("--radio rootcanal spreads a fleet over VMs"), "\(outcome.stderr)")
    }

    @Test func anUnknownRadioIsAUsageError() async throws {
        let outcome = try await BlemuProcess.run(["lab", "run", "--radio", "nrf52", "--", "true"])
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains("--radio must be btvirt or rootcanal, got nrf52"), "\(outcome.stderr)")
    }
}

/// `blemu lab air`, the hidden command `lab run` starts in the radio's network namespace: when the air cannot come
/// up, the reason is in radio-failure (which the run reports as its failed step "radio") and the exit is 70.
struct LabAirCommandTests {
    @Test func aRootCanalThatCannotStartIsRecordedAsTheRadiosFailure() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blemu-air-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plan = directory + "/air-plan.json"
        try #"{"machines":[{"command":["/bin/true"],"controllers":1,"resultsDirectory":"\#(directory)"}]}"#.write(
            toFile: plan, atomically: true, encoding: .utf8)
        // In a network namespace of its own, as lab run starts it: the air brings its loopback up there.
        let unshare = ["/usr/bin/unshare"] + (geteuid() == 0 ? ["--net"] : ["--map-root-user", "--net"]) + ["--"]
        let outcome = try await BlemuProcess.run(
            Array(unshare.dropFirst())
                + [
                    BlemuProcess.executable.path, "lab", "air", "--rootcanal", directory + "/no-rootcanal", "--plan",
                    plan,
                ],
            executable: "/usr/bin/unshare")
        #expect(outcome.status == 70, "\(outcome.stderr)")
        let failure = (try? String(contentsOfFile: directory + "/radio-failure", encoding: .utf8)) ?? ""
        #expect(failure.hasPrefix("cannot start \(directory)/no-rootcanal"), "\(failure)")
    }

    @Test func aPlanThatCannotBeReadExits66() async throws {
        let outcome = try await BlemuProcess.run(
            ["lab", "air", "--rootcanal", "/bin/true", "--plan", "/nonexistent/air-plan.json"])
        #expect(outcome.status == 66)
        #expect(outcome.stderr.contains("cannot read the plan /nonexistent/air-plan.json"), "\(outcome.stderr)")
    }
}
