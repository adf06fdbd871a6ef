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
