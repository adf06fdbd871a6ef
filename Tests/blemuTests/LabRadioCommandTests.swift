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
        #expect(outcome.stderr.contains("\(cache)/venv/bin/pip install rootcanal==1.13.0"), "\(outcome.stderr)")
    }

    /// This process's glibc (confstr(3)), to know whether RootCanal's binary needs Debian 13's beside it.
    static let hostGlibcIsOlderThan239: Bool = {
        var buffer = [CChar](repeating: 0, count: 64)
        guard confstr(Int32(_CS_GNU_LIBC_VERSION), &buffer, buffer.count) > 0 else { return false }
        let version = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = version.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
        return parts.count >= 2 && (parts[0], parts[1]) < (2, 39)
    }()

    @Test(.enabled(if: hostGlibcIsOlderThan239, "the host's glibc runs RootCanal's binary as it is"))
    func rootCanalWithoutTheGlibcItNeedsExits69WithTheCommandThatUnpacksIt() async throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("blemu-cache-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        // The right version in the venv, as pip leaves it, but no glibc-runtime in the cache.
        let packages = cache + "/venv/lib/python3.11/site-packages"
        let binary = packages + "/rootcanal/bin/linux-x86_64"
        try FileManager.default.createDirectory(atPath: binary, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: packages + "/rootcanal-1.13.0.dist-info", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(
            atPath: binary + "/rootcanal", contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        let outcome = try await BlemuProcess.run(
            ["lab", "run", "--radio", "rootcanal", "--", "true"], environment: ["BLEMU_CACHE": cache])
        #expect(outcome.status == 69, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("RootCanal 1.13.0 needs glibc 2.39"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("run scripts/fetch-glibc-runtime"), "\(outcome.stderr)")
    }

    @Test func aFleetPastBtvirtsControllersIsSentToRootCanal() async throws {
        let outcome = try await BlemuProcess.run(
            ["lab", "run", "--profile", "profiles/heart-rate.yaml", "--copies", "16", "--", "true"])
        #expect(outcome.status == 64, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("--copies must be 1...15 on btvirt, got 16"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("--radio rootcanal spreads a fleet over VMs"), "\(outcome.stderr)")
    }

    @Test func airLinksAreUsageErrorsOffRootCanalOrWithoutAPort() async throws {
        let btvirt = try await BlemuProcess.run(["lab", "run", "--air-listen", "10.0.0.1:7404", "--", "true"])
        #expect(btvirt.status == 64, "\(btvirt.stderr)")
        #expect(
            btvirt.stderr.contains(
                "--air-listen and --air-link need --radio rootcanal: btvirt's air does not leave its VM"),
            "\(btvirt.stderr)")
        let portless = try await BlemuProcess.run(
            ["lab", "run", "--radio", "rootcanal", "--air-link", "lab-b.example", "--", "true"])
        #expect(portless.status == 64, "\(portless.stderr)")
        #expect(
            portless.stderr.contains("--air-link must be HOST:PORT ([ADDRESS]:PORT for IPv6), got lab-b.example"),
            "\(portless.stderr)")
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

/// `blemu lab bridge`, the hidden command a fleet's VMs run to join control sockets across their edges
/// (`ControlBridge`): a join it cannot read is a usage error, a socket it cannot take is an OS error, each said.
struct LabBridgeCommandTests {
    @Test func aJoinThatIsNotTwoEndpointsIsAUsageError() async throws {
        let outcome = try await BlemuProcess.run(["lab", "bridge", "--join", "unix:/run/a.sock"])
        #expect(outcome.status == 64)
        #expect(
            outcome.stderr.contains(
                "lab bridge: --join unix:/run/a.sock: expected unix:PATH or tcp:HOST:PORT on each side of ="),
            "\(outcome.stderr)")
        let nothing = try await BlemuProcess.run(["lab", "bridge"])
        #expect(nothing.status == 64)
        #expect(nothing.stderr.contains("nothing to join"), "\(nothing.stderr)")
    }

    @Test func aSocketItCannotTakeExits71NamingIt() async throws {
        let outcome = try await BlemuProcess.run(
            ["lab", "bridge", "--join", "unix:/nonexistent/dir/a.sock=tcp:127.0.0.1:7201"])
        #expect(outcome.status == 71)
        #expect(
            outcome.stderr.contains("lab bridge: cannot listen at /nonexistent/dir/a.sock: No such file or directory"),
            "\(outcome.stderr)")
    }
}
