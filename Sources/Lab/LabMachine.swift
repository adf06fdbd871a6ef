import FoundationEssentials
import LocalIO
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lab: boots a qemu VM with the host's root shared read-only, real bluetoothd and btvirt's virtual
/// controllers, runs one command in it and returns its exit code (docs/lab.md).
///
/// `run` throws `LabError` when the rig itself fails (missing packages, a bring-up step that hangs, the timeout);
/// the command's own failure is its exit code. Every wait is bounded, in the VM and on the host.
public struct LabMachine: Sendable {
    /// What to boot.
    public let configuration: LabConfiguration
    /// Where progress and timings go (also copied to `lab.log` in the results directory).
    public let logger: Logger

    /// Receives COMMAND's output (stdout and stderr, as `command.log` gets it) while it runs, within 0.1 s of the
    /// VM writing it; nil to only keep `command.log`.
    public let commandOutput: (@Sendable (Data) -> Void)?

    /// A machine for `configuration`; nothing happens until `run`. `commandOutput` streams COMMAND's output.
    public init(
        configuration: LabConfiguration, logger: Logger, commandOutput: (@Sendable (Data) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        self.commandOutput = commandOutput
    }

    /// The host's transcript of the run, next to the VM's logs.
    static let transcriptFile = "lab.log"
    /// qemu's standard output and error: the serial console (kernel, initramfs, step lines).
    static let consoleFile = "console.log"

    /// Boots the VM, runs `command` in it (argv, run without a shell), and powers off.
    ///
    /// Throws `LabError` when the configuration is invalid, the rig is missing, a step fails or the run times out;
    /// cancelling the task kills the VM (within 0.1 s of polling, 5 s of grace) and throws `CancellationError`.
    public func run(_ command: [String]) async throws -> LabRun {
        if let problem = configuration.validationProblem() { throw LabError.invalidConfiguration(problem) }
        guard !command.isEmpty else { throw LabError.invalidConfiguration("no command to run") }
        let prerequisites = LabPrerequisites.check(
            bluez: configuration.bluez, kernel: configuration.kernel, radio: configuration.radio)
        guard prerequisites.isSatisfied, let kernel = prerequisites.kernel,
            let busybox = prerequisites.path(of: "busybox (static)"),
            let qemu = prerequisites.path(of: "qemu-system-x86_64"), let timeout = prerequisites.path(of: "timeout"),
            let bluez = configuration.bluez ?? BlueZInstall.system(),
            let btvirt = prerequisites.path(of: "btvirt")
        else { throw LabError.prerequisitesMissing(prerequisites.report) }
        let patchedRadio = prerequisites.path(of: "btvirt with the lab's link timing")
        let radio = patchedRadio ?? btvirt
        var air: QEMUCommand.Air?
        if configuration.radio == .rootcanal {
            guard let rootcanal = prerequisites.path(of: "rootcanal \(RootCanalInstall.version)"),
                let unshare = prerequisites.path(of: "unshare"), let launcher = configuration.airLauncher
            else { throw LabError.prerequisitesMissing(prerequisites.report) }
            air = QEMUCommand.Air(
                unshare: unshare, launcher: launcher, rootcanal: rootcanal, isPrivileged: geteuid() == 0)
        }

        let results = configuration.resultsDirectory
        let transcript = try Transcript(path: results + "/" + Self.transcriptFile, logger: logger)
        transcript.log("\(bluez), \(kernel)")
        for path in configuration.pathsHiddenFromGuest(in: command) {
            let warning =
                "the command names \(path), which the VM cannot see: it mounts its own "
                + "\(GuestInit.tmpfsMounts.joined(separator: ", ")); put it under the working directory or your home"
            logger.warning("\(warning)")
            transcript.log(warning, toLogger: false)
        }
        if let air {
            transcript.log("radio: RootCanal \(air.rootcanal), through the lab's relay (\(RootCanalAir.relayLogFile))")
        } else {
            transcript.log(
                patchedRadio == nil
                    ? "radio: \(radio), unpatched: bluetoothd will miss Connected for centrals (run scripts/build-bluez 5.82)"
                    : "radio: \(radio) (patched as a radio behaves: \(BlueZInstall.radioPatches(of: radio)))")
        }
        // Links with airs elsewhere: the host's side runs for the whole run, the other lab's air may come and go.
        let links = air == nil ? nil : airLinksPlan()
        let linkSplice = try links.map { links in
            transcript.log(
                "air links: controllers addressed \(RootCanalAir.address(of: 0, airByte: links.addressByte)) and on"
                    + (configuration.airListen.map { ", taking links on \($0)" } ?? "")
                    + configuration.airLinks.map { ", linking to \($0)" }.joined())
            return try startAirLinks(links) { transcript.log("air link: " + $0) }
        }
        defer { linkSplice?.stop() }
        let fleet = LabFleet(configuration)
        let copies = try profileCopies()
        let central = fleet.machines[0]
        try write(bluez.version + "\n", to: results + "/" + GuestStack.File.bluezVersion)
        try copyBlemuWhereTheGuestSeesIt(central.configuration)
        var stack = GuestStack(
            configuration: central.configuration, command: command, bluez: bluez, radio: radio, busybox: busybox,
            profileCopies: try copyProfiles(copies, for: central))
        if fleet.spansMachines {
            stack.role = .central(
                fleet: fleet.peripheralMachines.map {
                    .init(directory: $0.configuration.resultsDirectory, firstController: $0.firstController)
                })
            transcript.log(
                "fleet: the central in vm0, \(configuration.profiles.count) peripherals in "
                    + "\(fleet.peripheralMachines.count) VMs of up to \(configuration.devicesPerMachine)"
                    + (configuration.peripheralSystem.map { " on \($0)" } ?? ""))
        }
        let script = results + "/" + GuestStack.File.script
        try write(
            GuestStack.mainConf(for: configuration.radio, dualMode: configuration.isDualMode),
            to: results + "/" + GuestStack.File.mainConf)
        do {
            try FileManager.default.createDirectory(
                atPath: results + "/" + BleakDefaultAdapter.directory, withIntermediateDirectories: true)
        } catch {
            throw LabError.io("cannot create \(results)/\(BleakDefaultAdapter.directory): \(error)")
        }
        try write(
            BleakDefaultAdapter.source,
            to: results + "/" + BleakDefaultAdapter.directory + "/" + BleakDefaultAdapter.file)
        try write(GuestStack.functions, to: results + "/" + GuestStack.File.functions)
        try write(stack.script, to: script)

        let initramfs = try cachedInitramfs(kernel: kernel, busybox: busybox)
        // The fleet's VMs: each its own results directory, BlueZ and kernel (the run's, or `peripheralSystem`'s),
        // guest script and profiles.
        var fleetMachines: [(machine: LabFleet.Machine, kernel: LabKernel, initramfs: String, script: String)] = []
        for machine in fleet.peripheralMachines {
            fleetMachines.append(try prepare(machine, copies: copies, busybox: busybox, radio: radio))
        }
        var attempt = configuration
        let kvmFailedBefore = FileManager.default.fileExists(atPath: kvmFailureMark)
        if configuration.accelerator == .auto && kvmFailedBefore && Self.kvmIsUsable {
            transcript.log("KVM did not work here before (\(kvmFailureMark)): booting with TCG")
        }
        attempt.accelerator =
            configuration.accelerator == .auto
            ? (Self.kvmIsUsable && !kvmFailedBefore ? .kvm : .tcg) : attempt.accelerator
        while true {
            let qemuCommand = QEMUCommand(
                configuration: central.configuration.with(accelerator: attempt.accelerator), timeout: timeout,
                qemu: qemu, kernel: kernel.image, modules: kernel.isSystem ? nil : kernel.modules,
                initramfs: initramfs, script: script, air: air,
                network: fleet.spansMachines
                    ? ControlBridge.reachingNetwork
                    : configuration.liveView?.qemuNetwork(peripherals: configuration.profiles.count) ?? [])
            var launch = qemuCommand.arguments
            if let air {
                var plan = RootCanalAir.Plan(
                    machines: [
                        .init(
                            command: launch, controllers: central.configuration.controllers,
                            resultsDirectory: results)
                    ], glibcRuntime: RootCanalInstall.find()?.glibcRuntime, links: links)
                for vm in fleetMachines {
                    let command = QEMUCommand(
                        configuration: vm.machine.configuration.with(accelerator: attempt.accelerator),
                        timeout: timeout, qemu: qemu, kernel: vm.kernel.image,
                        modules: vm.kernel.isSystem ? nil : vm.kernel.modules, initramfs: vm.initramfs,
                        script: vm.script, air: air, firstController: vm.machine.firstController,
                        network: ControlBridge.servingNetwork(
                            firstController: vm.machine.firstController,
                            controllers: vm.machine.configuration.controllers))
                    plan.machines.append(
                        .init(
                            command: command.arguments, controllers: vm.machine.configuration.controllers,
                            resultsDirectory: vm.machine.configuration.resultsDirectory))
                    transcript.log("\(vm.machine.name): \(command.arguments.joined(separator: " "))")
                }
                let planFile = results + "/" + RootCanalAir.Plan.file
                try writePlan(plan, to: planFile)
                launch = QEMUCommand.airLaunch(air, plan: planFile)
            }
            transcript.log("booting: \(launch.joined(separator: " "))")
            transcript.log("command: \(command.joined(separator: " "))")

            // Under KVM the guest reaches its first step in about a second; a KVM that hangs instead of failing
            // (seen on some nested layers: the vCPU spins in the host kernel) is given up on and booted with TCG.
            let stallLimit: Duration? =
                configuration.accelerator == .auto && attempt.accelerator == .kvm ? Self.kvmStallLimit : nil
            let (status, steps, total) = try await boot(launch, transcript: transcript, stallLimit: stallLimit)
            try Task.checkCancellation()
            transcript.log("qemu exited with status \(status) after \(Self.seconds(total))")
            if let stallLimit, steps.isEmpty, total >= stallLimit, readExitCode() == nil {
                transcript.log(
                    "KVM did not work here (no step within \(Self.seconds(stallLimit)): the guest hung); "
                        + "booting again with TCG")
                rememberKVMFailure()
                forgetAttempt()
                attempt.accelerator = .tcg
                continue
            }

            switch outcome(status: status, steps: steps, total: total) {
            case .success(var run):
                let summary = LabSummary(run: run, profiles: configuration.profiles)
                run.summary = summary
                do { try summary.write(to: results) } catch {
                    transcript.log("cannot write \(LabSummary.file): \(error)")
                }
                transcript.log("summary: \(summary.line)", toLogger: false)
                let untilCommand = run.untilCommand.map(Self.seconds) ?? "?"
                transcript.log(
                    "command exited with \(run.exitCode); qemu start to command \(untilCommand), "
                        + "total \(Self.seconds(total)), accelerator \(attempt.accelerator.rawValue)")
                return run
            case .failure(.machineFailed(let status, let step, _))
            where configuration.accelerator == .auto && attempt.accelerator == .kvm:
                // qemu itself died under KVM (a timeout or a failed step is the guest's, and is not retried).
                transcript.log(
                    "KVM did not work here (qemu status \(status) in step '\(step)'); booting again with TCG")
                rememberKVMFailure()
                forgetAttempt()
                attempt.accelerator = .tcg
            case .failure(let error):
                transcript.log(error.description, toLogger: false)
                throw error
            }
        }
    }

    /// How long a KVM boot may go without reaching its first step before `auto` falls back to TCG: a KVM guest
    /// gets there in 1-2 s, a TCG one in 5-10 s.
    static let kvmStallLimit: Duration = .seconds(15)

    /// Marks KVM as failed for this host kernel, so later `auto` boots go straight to TCG instead of paying for
    /// the failed attempt again (up to `kvmStallLimit`). Named after the kernel release: a new kernel tries again.
    var kvmFailureMark: String {
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return configuration.cacheDirectory + "/kvm-failed-" + release
    }

    /// Writes `kvmFailureMark`; a failure to write only costs the next boot another try.
    private func rememberKVMFailure() {
        try? FileManager.default.createDirectory(
            atPath: configuration.cacheDirectory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: kvmFailureMark, contents: Data())
    }

    /// Whether /dev/kvm can be opened read-write; whether it really runs a guest only a boot can tell.
    static var kvmIsUsable: Bool {
        let fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// Removes what a failed boot left for the host to read, so the next boot's steps start afresh.
    private func forgetAttempt() {
        for file in [
            GuestStack.File.steps, GuestStack.File.failure, GuestStack.File.exitCode, GuestStack.File.controllers,
            RootCanalAir.failureFile,
        ] {
            try? FileManager.default.removeItem(atPath: configuration.resultsDirectory + "/" + file)
        }
        for machine in LabFleet(configuration).peripheralMachines {
            for file in [
                GuestStack.File.steps, GuestStack.File.failure, GuestStack.File.exitCode, GuestStack.File.controllers,
                GuestStack.File.serving, GuestStack.File.stop, GuestStack.File.machineExit,
            ] {
                try? FileManager.default.removeItem(atPath: machine.configuration.resultsDirectory + "/" + file)
            }
        }
    }

    /// What the results directory says about a finished VM: the command's exit code, else the failed step, else a
    /// timeout or a machine failure, each with the relevant logs' tails.
    func outcome(status: Int32, steps: [LabRun.Step], total: Duration) -> Result<LabRun, LabError> {
        let results = configuration.resultsDirectory
        let lastStep = steps.last?.name ?? "boot"
        // The air failing (RootCanal gone) ends the VM from outside: whatever the guest made of it comes second.
        if let failure = try? String(contentsOfFile: results + "/" + RootCanalAir.failureFile, encoding: .utf8) {
            let reason = failure.trimmingWhitespace()
            return .failure(.stepFailed(step: "radio", reason: reason, logTail: logTail(for: "radio")))
        }
        if let exitCode = readExitCode() {
            let fleet = LabFleet(configuration)
            // A fleet's peripherals are named by their VM: "vm1/hci0".
            let peripherals =
                fleet.spansMachines
                ? fleet.peripheralMachines.flatMap { machine in
                    machine.configuration.peripheralControllers.map { machine.name + "/" + $0 }
                } : configuration.peripheralControllers
            var run = LabRun(
                exitCode: exitCode, resultsDirectory: results, controllers: readControllers(),
                peripherals: peripherals, central: fleet.spansMachines ? "hci0" : configuration.centralController,
                steps: steps, total: total, bluezVersion: readBlueZVersion())
            run.kernelRelease = readKernelRelease()
            return .success(run)
        }
        if let failure = try? String(contentsOfFile: results + "/" + GuestStack.File.failure, encoding: .utf8) {
            let lines = failure.split(separator: "\n", maxSplits: 1).map(String.init)
            let step = lines.first ?? lastStep
            let reason = lines.count > 1 ? lines[1].trimmingWhitespace() : "unknown"
            return .failure(.stepFailed(step: step, reason: reason, logTail: logTail(for: step)))
        }
        // timeout(1) exits 124 after TERM; it dies of its own KILL when qemu outlives TERM by --kill-after.
        if status == 124 || status == 137 || total >= configuration.timeout {
            let seconds = configuration.timeout.components.seconds
            return .failure(.timedOut(step: lastStep, seconds: seconds, logTail: logTail(for: lastStep)))
        }
        return .failure(.machineFailed(status: status, step: lastStep, logTail: logTail(for: lastStep)))
    }

    /// Starts qemu, follows the `steps` file until qemu exits, and returns qemu's status, the steps and the time.
    /// With `stallLimit`, qemu is stopped when no step has appeared by then.
    private func boot(
        _ arguments: [String], transcript: Transcript, stallLimit: Duration? = nil
    ) async throws -> (Int32, [LabRun.Step], Duration) {
        let results = configuration.resultsDirectory
        let files = FileManager.default
        // A reused results directory must not pass off the last run's files as this one's.
        for stale in [
            GuestStack.File.steps, GuestStack.File.failure, GuestStack.File.exitCode, GuestStack.File.controllers,
            GuestStack.File.command, RootCanalAir.failureFile,
        ] {
            try? files.removeItem(atPath: results + "/" + stale)
        }
        let consolePath = results + "/" + Self.consoleFile
        let console = open(consolePath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard console >= 0 else { throw LabError.io("cannot create \(consolePath)") }
        defer { close(console) }

        let clock = ContinuousClock()
        let start = clock.now
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess.start(
                arguments, standardOutput: .descriptor(console), standardError: .descriptor(console))
        } catch {
            throw LabError.io("cannot start \(arguments[0]): \(error)")
        }

        // A second bound behind timeout(1)'s, in case timeout itself is stuck: never a stuck job.
        let hardLimit = configuration.timeout + .seconds(30)
        var steps: [LabRun.Step] = []
        var seenBytes = 0
        var output = FileFollower(path: results + "/" + GuestStack.File.command)
        func forwardOutput() {
            guard let commandOutput else { return }
            let data = output.next()
            if !data.isEmpty { commandOutput(data) }
        }
        while process.isRunning {
            let stalled = stallLimit.map { steps.isEmpty && clock.now - start > $0 } ?? false
            if Task.isCancelled || clock.now - start > hardLimit || stalled {
                transcript.log(
                    Task.isCancelled
                        ? "cancelled: killing the VM"
                        : stalled ? "no step yet: killing the VM" : "hard limit passed: killing the VM")
                // Up to 5 s of grace, on a thread of its own: the wait blocks, and no thread of the cooperative pool
                // may.
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    do {
                        try DetachedThread.start {
                            process.stop(grace: .seconds(5))
                            done.resume()
                        }
                    } catch {
                        process.signal(SIGKILL, group: true)
                        done.resume()
                    }
                }
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
            forwardOutput()
            for step in newSteps(after: &seenBytes, elapsed: clock.now - start) {
                steps.append(step)
                transcript.log(
                    "step \(step.name) at \(Self.seconds(step.sinceStart)) (VM uptime \(step.guestUptime.map { "\($0) s" } ?? "?"))"
                )
            }
        }
        // qemu has exited (or was killed above): the wait only reaps it.
        let status = process.wait()
        forwardOutput()
        let total = clock.now - start
        steps += newSteps(after: &seenBytes, elapsed: total)
        return (status, steps, total)
    }

    /// "12.3 s".
    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return String(cFormat: "%.1f s", value)
    }
}

/// The host's transcript: each line to the logger and to `lab.log` in the results directory.
private struct Transcript {
    let path: String
    let logger: Logger

    /// Creates the results directory and an empty transcript; fails when the directory cannot be written.
    init(path: String, logger: Logger) throws {
        self.path = path
        self.logger = logger
        let directory = LocalFile.split(path).directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data().write(to: URL(fileURLWithPath: path))
        } catch {
            throw LabError.io("cannot write the results directory \(directory): \(error)")
        }
    }

    /// Logs `message` at info (unless the caller reports it itself) and appends it, time-stamped, to the file;
    /// a failed append is only lost, not fatal.
    func log(_ message: String, toLogger: Bool = true) {
        if toLogger { logger.info("\(message)") }
        try? LocalFile.append(Array("\(Date()) \(message)\n".utf8), toPath: path, creating: false)
    }
}
