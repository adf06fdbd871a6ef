import Foundation

@testable import Lab

/// Two hosts on one machine, each a network namespace with its own address on a veth pair (10.77.0.1 and .2), each
/// running its own `blemu lab run --radio rootcanal`: its own RootCanal, relay and VM. The first serves the
/// thermostat on Debian 12's system and takes links (`--air-listen 10.77.0.1:7404`); the second, on the newest
/// system with only a central, links to it (`--air-link`) and verifies the thermostat with pairing and writes
/// (Fixtures/lab-linked-air.sh). The command line is the user's: what docs/lab.md says to run on two machines.
enum LinkedAirsScenario {
    /// What the two runs left.
    struct Outcome: Sendable {
        /// The listening host's results directory and `blemu lab run` exit status.
        let listener: String
        let listenerStatus: Int32
        /// The linking host's.
        let linker: String
        let linkerStatus: Int32
    }

    /// The listening host's address and the air's port on it.
    static let listenAddress = "10.77.0.1"
    static let linkerAddress = "10.77.0.2"
    static let port = 7404
    /// The thermostat's address: the listening air keeps DA:4C:10:DE, and its VM's hci0 is the first controller.
    static let peripheralAddress = "DA:4C:10:DE:00:00"
    static let profile = LabScenario.package + "/profiles/thermostat.yaml"
    static let listenerSystem = "debian-12"
    static let linkerSystem = "current"

    /// iproute2's ip, which makes the namespaces and the veth pair.
    static let ip = ["/usr/bin/ip", "/bin/ip", "/usr/sbin/ip", "/sbin/ip"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Root (network namespaces and veth pairs need CAP_NET_ADMIN), ip, RootCanal and both systems.
    static let isAvailable =
        LabScenario.isAvailable && LabScenario.rootCanalIsInstalled && geteuid() == 0 && ip != nil
        && (try? LabSystem.resolve(listenerSystem)) != nil && (try? LabSystem.resolve(linkerSystem)) != nil

    /// The one run both hosts make, admitted to `LabBootGate` as a long boot (two VMs and two airs).
    static let shared = Task { try await LabBootGate.shared.admitted(.long) { try await run() } }

    private static func run() async throws -> Outcome {
        let names = (listener: "blemu-\(getpid())-a", linker: "blemu-\(getpid())-b")
        try setUpHosts(names)
        defer { tearDownHosts(names) }
        let listener = try LabScenario.freshResultsDirectory()
        let linker = try LabScenario.freshResultsDirectory()
        let script = LabScenario.fixtures + "/lab-linked-air.sh"
        let blemu = LabScenario.blemuExecutable
        let listening = try start(
            in: names.listener,
            [
                blemu, "lab", "run", "--radio", "rootcanal", "--air-listen", "\(listenAddress):\(port)", "--system",
                listenerSystem, "--profile", profile, "--results", listener, "--timeout", "720", "--", "/bin/sh",
                script, "listen",
            ], output: listener + "/lab-run.out")
        let linking = try start(
            in: names.linker,
            [
                blemu, "lab", "run", "--radio", "rootcanal", "--air-link", "\(listenAddress):\(port)", "--system",
                linkerSystem, "--results", linker, "--timeout", "600", "--", "/bin/sh", script, "link", blemu, profile,
                peripheralAddress,
            ], output: linker + "/lab-run.out")
        while linking.isRunning { try await Task.sleep(for: .milliseconds(200)) }
        // The listening VM powers off once told, leaving its counters.
        _ = FileManager.default.createFile(atPath: listener + "/linked-done", contents: nil)
        let deadline = ContinuousClock.now + .seconds(120)
        while listening.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
        if listening.isRunning { listening.terminate() }
        listening.waitUntilExit()
        return Outcome(
            listener: listener, listenerStatus: listening.terminationStatus, linker: linker,
            linkerStatus: linking.terminationStatus)
    }

    /// `command` in network namespace `name` (ip netns exec), its output to `output`.
    private static func start(in name: String, _ command: [String], output: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ip ?? "ip")
        process.arguments = ["netns", "exec", name] + command
        process.currentDirectoryURL = URL(fileURLWithPath: LabScenario.package)
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Two namespaces joined by a veth pair, each end with its address and up, and each loopback up.
    private static func setUpHosts(_ names: (listener: String, linker: String)) throws {
        tearDownHosts(names)
        let ends = (names.listener.suffix(9) + "v", names.linker.suffix(9) + "v")
        let steps: [[String]] = [
            ["netns", "add", names.listener], ["netns", "add", names.linker],
            ["link", "add", String(ends.0), "type", "veth", "peer", "name", String(ends.1)],
            ["link", "set", String(ends.0), "netns", names.listener],
            ["link", "set", String(ends.1), "netns", names.linker],
            ["-n", names.listener, "addr", "add", listenAddress + "/24", "dev", String(ends.0)],
            ["-n", names.linker, "addr", "add", linkerAddress + "/24", "dev", String(ends.1)],
            ["-n", names.listener, "link", "set", String(ends.0), "up"],
            ["-n", names.linker, "link", "set", String(ends.1), "up"],
            ["-n", names.listener, "link", "set", "lo", "up"], ["-n", names.linker, "link", "set", "lo", "up"],
        ]
        for step in steps {
            let status = runIP(step)
            guard status == 0 else {
                throw LabError.io("ip \(step.joined(separator: " ")) exited with \(status)")
            }
        }
    }

    /// Deletes both namespaces, and with them the veth pair.
    private static func tearDownHosts(_ names: (listener: String, linker: String)) {
        _ = runIP(["netns", "delete", names.listener])
        _ = runIP(["netns", "delete", names.linker])
    }

    private static func runIP(_ arguments: [String]) -> Int32 {
        (try? ChildProcess.run([ip ?? "ip"] + arguments))?.status ?? -1
    }
}
