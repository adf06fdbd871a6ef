import Foundation
import Logging
import Testing

@testable import Lab

/// The one VM boot the lab tests share: a stand-in peripheral on hci0, `blemu probe` and then a python central on
/// hci1, a scenario that records what it saw in the results directory and exits 3. Booting costs ~20 s of TCG, so
/// tests await this one run and assert on its files.
actor LabScenario {
    /// The shared scenario; boots on first use.
    static let shared = LabScenario(boot: bootScenario)

    /// The blemu the scenarios serve, probe and clone with: the release build in `BLEMU_RELEASE_DIR` when it names
    /// one (CI passes scripts/package's: what users install, and under TCG about half the CPU of the debug build per
    /// `blemu probe`, docs/architecture.md "Test levels"), else the one next to the test bundle (`swift test` builds
    /// every product). Either is visible in the VM through the read-only root share, since .build is not under /tmp.
    static let blemuExecutable =
        releaseDirectory.map { $0 + "/blemu" }
        ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("blemu").path

    /// `BLEMU_RELEASE_DIR` when set: a release build of blemu and blemu-cli from this commit
    /// (Benchmarks/release-blemu reads it too; LabRequestTests fails when one is missing).
    static let releaseDirectory: String? = {
        guard let directory = ProcessInfo.processInfo.environment["BLEMU_RELEASE_DIR"], !directory.isEmpty else {
            return nil
        }
        return directory
    }()

    /// Seconds `blemu probe` listens for notifications in the scenarios; short, to keep each boot well under a
    /// minute.
    static let probeListenSeconds = 1

    /// True when `BLEMU_LAB_TESTS=1` asks for level 6 (docs/architecture.md, "Test levels"): `swift test` alone runs
    /// levels 1-5 in minutes, and the lab's suites, which boot VMs under TCG for most of half an hour, run only when
    /// asked for (CI does).
    static let isRequested = ProcessInfo.processInfo.environment["BLEMU_LAB_TESTS"] == "1"

    /// True when the lab was asked for and this machine has everything the scenarios need (the rig plus
    /// python3-dbus and python3-gi). Asked for on a machine without it, `LabRequestTests` fails with what is missing
    /// rather than every suite skipping in silence.
    static let isAvailable = isRequested && LabPrerequisites.check().isComplete

    /// The local name the stand-in peripheral (Fixtures/fake-blemu) advertises; the central must report it.
    static let localName = "blemu-lab"
    /// The exit code the scenario's command ends with, to prove it is propagated.
    static let commandExitCode: Int32 = 3
    /// Controllers booted: one more than the default, to exercise `--controllers`.
    static let controllers = 3

    private let bootScenario: @Sendable (LabSystem) async throws -> LabRun
    private let length: LabBootGate.Length
    private var boots: [String: Task<LabRun, any Error>] = [:]

    /// A scenario that boots with `boot` on first use, once per system and radio; a `.long` one is admitted to
    /// `LabBootGate` before the short ones.
    init(length: LabBootGate.Length = .short, boot: @escaping @Sendable (LabSystem) async throws -> LabRun) {
        self.length = length
        bootScenario = boot
    }

    /// The radio the boot in progress puts its controllers on: `boot(_:running:)` reads it, so every scenario's
    /// boot function runs unchanged on either radio.
    @TaskLocal static var radio: LabConfiguration.Radio = .btvirt

    /// The run on `system` with btvirt's controllers.
    func run(on system: LabSystem) async throws -> LabRun {
        try await run(on: LabTarget(system: system, radio: .btvirt))
    }

    /// The run on `target`, booting it on the first call for that system and radio; every caller gets the same run
    /// or the same error.
    func run(on target: LabTarget) async throws -> LabRun {
        if let boot = boots[target.key] { return try await boot.value }
        let task = Task { [bootScenario, length] in
            try await LabBootGate.shared.admitted(length) {
                try await LabScenario.$radio.withValue(target.radio) { try await bootScenario(target.system) }
            }
        }
        boots[target.key] = task
        return try await task.value
    }

    /// Whether RootCanal, at the version the lab runs, is in the lab's venv (scripts/setup --lab installs it).
    static let rootCanalIsInstalled = RootCanalInstall.find()?.installedVersion == RootCanalInstall.version

    /// What the suites that the lab promises on both radios run on (docs/lab.md, "The radio"): `systems` on btvirt,
    /// then the last of them (the newest kernel and BlueZ, "current", where it is there: the one that sends extended
    /// advertising data) on RootCanal when it is installed.
    /// `BLEMU_LAB_RADIOS=btvirt` or `=rootcanal` keeps one radio.
    static let targets: [LabTarget] = bothRadios(systems)

    /// `boundingSystems` on btvirt, and RootCanal's one system, as `targets`.
    static let boundingTargets: [LabTarget] = bothRadios(boundingSystems)

    private static func bothRadios(_ btvirtSystems: [LabSystem]) -> [LabTarget] {
        let wanted = ProcessInfo.processInfo.environment["BLEMU_LAB_RADIOS"]?.split(separator: ",").map(String.init)
        let btvirt = btvirtSystems.map { LabTarget(system: $0, radio: .btvirt) }
        let rootcanal = rootCanalIsInstalled ? systems.suffix(1).map { LabTarget(system: $0, radio: .rootcanal) } : []
        return (btvirt + rootcanal).filter { wanted?.contains($0.radio.rawValue) ?? true }
    }

    /// Every system the lab can boot here; the smoke suites (LabScenario, extended advertising, pairing) run once per
    /// system: the named ones (docs/lab.md, "Kernels and systems"), else the system's kernel with each installed BlueZ.
    /// `BLEMU_LAB_SYSTEMS=debian-12,current` (comma-separated) narrows the list. A suite boots once per system and its
    /// tests read that run's files, so a system costs one boot per suite whatever it asserts: what a system skips is
    /// whole suites (`boundingSystems`).
    static let systems: [LabSystem] = {
        var found = LabSystem.available()
        if found.isEmpty, let kernel = LabKernel.system() {
            found = BlueZInstall.available().map { LabSystem(kernel: kernel, bluez: $0) }
        }
        guard let wanted = ProcessInfo.processInfo.environment["BLEMU_LAB_SYSTEMS"]?.split(separator: ",") else {
            return found
        }
        return found.filter { wanted.contains(Substring($0.name)) }
    }()

    /// The systems every other suite runs on: the full lab on two configurations, smokes on the rest. On three
    /// systems the middle one's eight minutes of short suites and the long ones (ATT, Clone, Profiles: six to ten
    /// minutes of TCG a boot) would add a quarter of an hour. See `bounding(of:chosen:)`.
    static let boundingSystems = bounding(
        of: systems, chosen: ProcessInfo.processInfo.environment["BLEMU_LAB_SYSTEMS"] != nil)

    /// The oldest and newest named systems among `systems`: they bound what changes between the BlueZ releases and
    /// kernels blemu supports (docs/bluez.md), while a system between them runs the smoke suites, which still boot
    /// every path of the stack once and pair. Every system when the list was `chosen` (`BLEMU_LAB_SYSTEMS`: asking
    /// for a system means all of it) or holds no named system at either end.
    static func bounding(of systems: [LabSystem], chosen: Bool) -> [LabSystem] {
        let ends = [LabSystem.names.first?.name, LabSystem.names.last?.name]
        let bounding = systems.filter { ends.contains($0.name) }
        return chosen || bounding.isEmpty ? systems : bounding
    }

    /// The checkout's root, found from this file.
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Boots `configuration` on `radio` (the task's) and runs `command` in the VM, logging the bring-up at info (what
    /// a failing test shows).
    static func boot(_ configuration: LabConfiguration, running command: [String]) async throws -> LabRun {
        var logger = Logger(label: "blemu.lab.tests")
        logger.logLevel = .info
        var configuration = configuration
        configuration.radio = radio
        configuration.airLauncher = blemuCLI
        return try await LabMachine(configuration: configuration, logger: logger).run(command)
    }

    /// The built blemu-cli beside `blemuExecutable`: its `lab air` runs RootCanal's air.
    static let blemuCLI = blemuExecutable + "-cli"

    /// Boots a scenario whose guest script runs blemu itself: `controllers` controllers, no profiles for the stack to
    /// start, the checkout as working directory, 30 s per bring-up step; `results` already holds the script's files.
    static func bootScripted(
        in results: String, controllers: Int = 2, timeout: Duration, on system: LabSystem, dualMode: Bool = false,
        running command: [String]
    ) async throws -> LabRun {
        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: controllers, timeout: timeout, stepTimeout: .seconds(30),
            workingDirectory: package, bluez: system.bluez, kernel: system.kernel, isDualMode: dualMode)
        return try await boot(configuration, running: command)
    }

    /// Runs the host's blemu and returns its stdout (empty on any failure).
    static func blemu(_ arguments: [String]) -> Data {
        Data(((try? ChildProcess.run([blemuExecutable] + arguments))?.output ?? "").utf8)
    }

    /// Tests/LabTests/Fixtures: profiles, guest scripts and helpers the scenarios run in the VM.
    static let fixtures = package + "/Tests/LabTests/Fixtures"

    /// `text` as a Python string literal, for paths written into generated Python scripts.
    static func pythonQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// A fresh results directory (the VM's work share) under .build, outside /tmp: kept after the run for
    /// reading, ignored by git.
    static func freshResultsDirectory() throws -> String {
        try LabConfiguration.makeFreshResultsDirectory(under: package + "/.build")
    }

    /// Fixtures/fake-blemu: stands in for `blemu run` on the peripheral controller, advertising `localName`.
    static let advertiser = fixtures + "/fake-blemu"

    /// Boots with Fixtures/fake-blemu as the stack's blemu and Fixtures/lab-scenario.sh as the command.
    private static func bootScenario(system: LabSystem) async throws -> LabRun {
        let results = try freshResultsDirectory()
        try "name: lab-test\n".write(toFile: results + "/lab-test.yaml", atomically: true, encoding: .utf8)

        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: controllers, profiles: [results + "/lab-test.yaml"],
            timeout: .seconds(240), stepTimeout: .seconds(60), blemuExecutable: advertiser, bluez: system.bluez,
            kernel: system.kernel)
        return try await LabScenario.boot(
            configuration,
            running: [
                "/bin/sh", fixtures + "/lab-scenario.sh", blemuExecutable, String(probeListenSeconds),
                String(commandExitCode),
            ])
    }
}

/// What a scenario boots on: a system, and the radio its controllers share.
struct LabTarget: Sendable, CustomTestStringConvertible {
    /// The kernel and BlueZ.
    let system: LabSystem
    /// btvirt in the VM, or RootCanal's air.
    let radio: LabConfiguration.Radio

    /// The scenario's key for this target's one boot.
    var key: String { radio == .btvirt ? system.name : system.name + " on RootCanal" }
    /// What a test's result line names.
    var testDescription: String { key }
}

extension Trait where Self == ConditionTrait {
    /// Runs only when BLEMU_LAB_TESTS=1 asks for the lab and it can boot (`blemu lab check`).
    static var needsLab: Self {
        .enabled(
            if: LabScenario.isAvailable,
            "level 6, the lab: BLEMU_LAB_TESTS=1 swift test --filter LabTests after scripts/setup --lab"
        )
    }

    /// Runs only where the built `blemu run` works (`blemu run --help` succeeds).
    static var needsBlemuRun: Self {
        .enabled(if: HeartRateScenario.blemuCanRun, "needs `blemu run` (blemu run --help must succeed)")
    }
}

extension Trait where Self == TimeLimitTrait {
    /// A scenario suite's bound, its wait at `LabBootGate` included: every suite boots once per system, two VMs at a
    /// time, so on three systems the last suite's boot waits behind about thirty others of a minute or more each
    /// (30 minutes was exceeded by the ATT suite, waiting, when debian-13 joined).
    static var labSuiteTimeLimit: Self { .timeLimit(.minutes(60)) }
}
