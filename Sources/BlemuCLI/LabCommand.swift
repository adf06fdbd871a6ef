import ArgumentParser
import Dispatch
import FoundationEssentials
import Lab
import LocalIO
import Logging
import Serving

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu lab`: run a command next to real bluetoothd and virtual controllers in a VM (see docs/lab.md).
struct LabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "Run a command in a VM with real bluetoothd and virtual Bluetooth controllers.",
        subcommands: [Run.self, Check.self, Air.self, Bridge.self])
}

extension LabCommand {
    /// `blemu lab run`: boot, run the command, exit with its exit code.
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Boot the lab VM, run COMMAND in it, exit with COMMAND's exit code.",
            discussion: """
                The VM sees this machine's root read-only and the results directory read-write at the same path.
                COMMAND runs as root in the current directory with BLEMU_LAB_PERIPHERAL, \
                BLEMU_LAB_PERIPHERAL_ADDRESS, BLEMU_LAB_CENTRAL, BLEMU_LAB_CENTRAL_ADDRESS, BLEMU_LAB_RESULTS and \
                BLEMU_LAB_BLUEZ_VERSION set. Its output (stdout and stderr together) is printed as it comes and kept \
                in command.log. Without COMMAND it \
                runs `blemu probe` on the central against the first peripheral: what a phone would see. Each \
                --profile runs as `blemu run` on hci0, hci1, ... before COMMAND starts, with a control socket \
                (BLEMU_LAB_CONTROL: `blemu ctl "$BLEMU_LAB_CONTROL" counters`) and an event log (BLEMU_LAB_EVENTS); \
                BLEMU_LAB_CONTROLS and BLEMU_LAB_EVENT_LOGS list every peripheral's, comma-separated, in controller \
                order. The central is the next controller. Controllers are LE-only unless --dual-mode.

                --bluez picks the BlueZ that boots (bluetoothd, btvirt, btmon, bluetoothctl and gatttool together; \
                btmgmt is always the system's): "system" (the default), a version built by scripts/build-bluez ("5.82"), or a directory \
                of such binaries. --kernel picks the guest kernel: "system" (the newest installed, the default), a \
                series unpacked by scripts/fetch-kernel ("6.12", "7.2"), or such a directory. --system names a pair \
                users run: debian-12 (kernel 6.1, BlueZ 5.66), debian-13 (6.12, 5.82) or current (7.2, 5.87); \
                --kernel and --bluez override its parts. `blemu lab check` lists what is installed.

                Example:
                  blemu lab run --profile profiles/heart-rate.yaml -- \\
                      sh -c 'btmgmt -i $BLEMU_LAB_CENTRAL find -l'

                Exit codes: COMMAND's own; 64 usage; 65 invalid profile (checked before the VM boots); 66 \
                unreadable profile; 69 lab unavailable or a bring-up step failed; 73 no results directory; 124 --timeout passed; 130 interrupted.
                """)

        @Option(name: .customLong("profile"), help: "A profile to run with `blemu run` (repeat for hci1, hci2...).")
        var profiles: [String] = []

        @Option(
            help:
                "Serve each --profile on this many controllers: a fleet, each copy named apart ({n} in the name, else a suffix)."
        )
        var copies: Int = 1

        @Option(
            help: "Number of virtual controllers (default: one per peripheral and one for the central, at least 2).")
        var controllers: Int?

        @Option(help: "Results directory (default: a new one in ~/.cache/blemu/lab/lab-results, the last 10 kept).")
        var results: String?

        @Option(help: "Seconds the whole run may take, boot included.")
        var timeout: Int = 300

        @Option(help: "Seconds each bring-up step in the VM may take.")
        var stepTimeout: Int = 60

        @Option(help: "qemu accelerator: auto (KVM where it boots, else TCG), tcg, or kvm.")
        var accel: String = LabConfiguration.Accelerator.auto.rawValue

        @Option(help: "The BlueZ to boot: system, a version from scripts/build-bluez (5.82), or a directory.")
        var bluez: String?

        @Option(help: "The guest kernel: system, a series from scripts/fetch-kernel (6.12, 7.2), or a directory.")
        var kernel: String?

        @Option(help: "A kernel and BlueZ users run together: debian-12, debian-13 or current (docs/lab.md).")
        var system: String?

        @Flag(help: "Virtual controllers with BR/EDR as well as LE (default: LE only).")
        var dualMode = false

        @Option(help: "Where the controllers live: btvirt (in the VM) or rootcanal (a shared air, docs/lab.md).")
        var radio: String = LabConfiguration.Radio.btvirt.rawValue

        @Option(
            name: .customLong("devices-per-vm"),
            help: "On rootcanal, the most peripherals one VM serves; a larger fleet spreads over more VMs.")
        var devicesPerVM = LabConfiguration(resultsDirectory: "/").devicesPerMachine

        @Option(help: "On rootcanal, boot the peripherals in VMs of their own on this system (debian-12, ...).")
        var peripheralSystem: String?

        @Option(
            help: ArgumentHelp(
                "On rootcanal, take links from airs on other machines at HOST:PORT (firewall it: docs/lab.md).",
                valueName: "host:port"))
        var airListen: String?

        @Option(
            help: ArgumentHelp(
                "On rootcanal, link this air to the one listening at HOST:PORT (repeatable).", valueName: "host:port"))
        var airLink: [String] = []

        @Option(
            name: .customLong("ui"),
            help: ArgumentHelp(
                "Serve a live view of each peripheral (blemu ui) in the VM, forwarded to ADDRESS (IPv4) and the ports "
                    + "after it, \(RunOptions.defaultUIAddress) when --ui is given alone; the URLs are printed.",
                valueName: "address"))
        var ui: String?

        /// The most copies of one profile `--copies` takes on btvirt: every controller it makes but the central's.
        static let maximumCopies = LabConfiguration.maximumControllers - 1
        /// The most on RootCanal, spread over VMs: what this 2-core machine was measured to carry is far below
        /// (docs/lab.md, "A fleet"); the bound keeps a typo from asking for thousands of VMs.
        static let maximumRootCanalCopies = 250

        @Argument(parsing: .postTerminator, help: "The command to run in the VM, after --.")
        var command: [String] = []

        func validate() throws {
            guard timeout > 0, stepTimeout > 0 else { throw ValidationError("timeouts must be positive") }
            let most =
                radio == LabConfiguration.Radio.rootcanal.rawValue ? Self.maximumRootCanalCopies : Self.maximumCopies
            guard (1...most).contains(copies) else {
                throw ValidationError(
                    "--copies must be 1...\(most) on \(radio), got \(copies)"
                        + (copies > most && most == Self.maximumCopies
                            ? " (--radio rootcanal spreads a fleet over VMs)" : ""))
            }
            guard LabConfiguration.Radio(rawValue: radio) != nil else {
                throw ValidationError("--radio must be btvirt or rootcanal, got \(radio)")
            }
            guard LabConfiguration.Accelerator(rawValue: accel) != nil else {
                throw ValidationError("--accel must be auto, tcg or kvm, got \(accel)")
            }
            if let ui, TCPEndpoint(ui).map({ $0.host.contains(":") || $0.port == 0 }) != false {
                throw ValidationError("--ui must be an IPv4 HOST:PORT with a port (qemu forwards no other), got \(ui)")
            }
            for (option, value) in (airListen.map { [("--air-listen", $0)] } ?? [])
                + airLink.map({ ("--air-link", $0) })
            where TCPEndpoint(value) == nil {
                throw ValidationError("\(option) must be HOST:PORT ([ADDRESS]:PORT for IPv6), got \(value)")
            }
        }

        func run() async throws {
            let logger = Logger(label: "blemu.lab", factory: { StreamLogHandler.standardError(label: $0) })
            signal(SIGPIPE, SIG_IGN)
            // Each profile gets blemu run's whole check here, before the VM boots: 66 unreadable, 65 invalid, with
            // diagnostics naming the user's path, not the copy the VM runs.
            for profile in profiles { try ProfileInput.check(profile) }
            let (install, guestKernel) = try Self.resolve(system: system, kernel: kernel, bluez: bluez)
            let here = FileManager.default.currentDirectoryPath
            var argv = command
            if argv.isEmpty {
                // What a phone would see: this same binary (visible in the VM through the read-only root share)
                // probes the first peripheral from the central controller.
                logger.notice("no COMMAND given: running blemu probe on the central against the first peripheral")
                argv = Self.defaultProbe()
            }
            let resultsDirectory: String
            if let results {
                resultsDirectory = absolute(results, in: here)
            } else {
                // Out of the user's repository: the per-user cache, keeping the newest few runs.
                let cache = LabConfiguration.defaultCacheDirectory()
                do { resultsDirectory = try LabConfiguration.makeFreshResultsDirectory(under: cache) } catch {
                    Console.write("lab: cannot create a results directory in \(cache): \(error)\n")
                    throw ExitCode.cannotCreate
                }
                LabConfiguration.pruneResults(under: cache, keep: Self.keptResults)
            }
            // A fleet: each profile's copies next to each other, hci0, hci1, ... (ProfileCopies names them apart).
            let peripherals = profiles.flatMap { Array(repeating: absolute($0, in: here), count: copies) }
            var configuration = LabConfiguration(
                resultsDirectory: resultsDirectory,
                controllers: controllers ?? max(2, peripherals.count + 1),
                profiles: peripherals,
                timeout: .seconds(timeout),
                stepTimeout: .seconds(stepTimeout),
                accelerator: LabConfiguration.Accelerator(rawValue: accel) ?? .auto,
                blemuExecutable: Self.executablePath(), bluez: install, kernel: guestKernel, isDualMode: dualMode)
            configuration.radio = LabConfiguration.Radio(rawValue: radio) ?? .btvirt
            configuration.airLauncher = Handover.ownPath
            configuration.devicesPerMachine = devicesPerVM
            configuration.airListen = airListen.flatMap(TCPEndpoint.init)
            configuration.airLinks = airLink.compactMap(TCPEndpoint.init)
            if let address = ui.flatMap(TCPEndpoint.init) {
                let host = address.host == "localhost" ? "127.0.0.1" : address.host
                let view = LabLiveView(host: host, port: address.port, token: RandomToken.make())
                configuration.liveView = view
                for index in peripherals.indices {
                    Console.write("lab: live view of hci\(index) once it serves: \(view.url(peripheral: index))\n")
                }
            }
            if let peripheralSystem {
                let (install, kernel) = try Self.resolve(system: peripheralSystem, kernel: nil, bluez: nil)
                configuration.peripheralSystem = LabSystem(name: peripheralSystem, kernel: kernel, bluez: install)
            }
            do {
                // COMMAND's output as it comes: a hung test shows where it hangs, long before --timeout.
                let machine = LabMachine(
                    configuration: configuration, logger: logger,
                    commandOutput: Self.writeToStandardOutput)
                let command = argv
                let run = try await Self.stoppingOnInterrupt { try await machine.run(command) }
                // One line a CI log shows at the end; summary.json holds the same, for machines.
                let line = run.summary?.line ?? "exit \(run.exitCode)"
                Console.write("lab: \(line)\nlab: results in \(run.resultsDirectory)\n")
                throw ExitCode(run.exitCode)
            } catch let error as LabError {
                Console.write(error.description + "\n")
                switch error {
                case .invalidConfiguration: throw ExitCode(64)
                case .timedOut: throw ExitCode(124)
                default: throw ExitCode(69)
                }
            } catch is CancellationError {
                Console.write("lab: interrupted; the VM was stopped\n")
                throw ExitCode(130)
            }
        }

        /// The BlueZ and kernel to boot: `--system`'s pair with `--kernel` and `--bluez` over its parts, each
        /// "system" when nothing names it; exit 69 naming the command that installs what is missing.
        static func resolve(
            system: String?, kernel: String?, bluez: String?
        ) throws -> (BlueZInstall, LabKernel) {
            func fail(_ message: String) -> ExitCode {
                Console.write("lab: \(message)\n")
                return ExitCode(69)
            }
            var named: LabSystem.Name?
            if let system {
                guard let name = LabSystem.names.first(where: { $0.name == system }) else {
                    Console.write(
                        "lab: --system \(system): not a named system ("
                            + LabSystem.names.map(\.name).joined(separator: ", ") + ")\n")
                    throw ExitCode(64)
                }
                named = name
            }
            let install: BlueZInstall
            do { install = try BlueZInstall.resolve(bluez ?? named?.bluez ?? "system") } catch {
                throw fail(error.description + (named.map { " (--system \($0.name))" } ?? ""))
            }
            let guestKernel: LabKernel
            do { guestKernel = try LabKernel.resolve(kernel ?? named?.kernel ?? "system") } catch {
                throw fail(error.description + (named.map { " (--system \($0.name))" } ?? ""))
            }
            return (install, guestKernel)
        }

        /// How many runs' default results directories the cache keeps.
        static let keptResults = 10

        /// Writes all of `data` to stdout; a reader that went away (`| head`) costs the output, never the run:
        /// SIGPIPE is ignored (`run()`), and EPIPE ends the write.
        @Sendable static func writeToStandardOutput(_ data: Data) {
            try? LocalFile.writeAll([UInt8](data), to: STDOUT_FILENO)
        }

        /// The command run when none is given: `blemu probe --adapter $BLEMU_LAB_CENTRAL <first peripheral>`.
        /// A shell expands the variables, which exist only inside the VM (`BLEMU_LAB_BLEMU` is where the VM sees
        /// this binary); `${...%%,*}` keeps the first address when several profiles run.
        static func defaultProbe() -> [String] {
            [
                "/bin/sh", "-c",
                "exec \"$BLEMU_LAB_BLEMU\" probe --adapter \"$BLEMU_LAB_CENTRAL\" \"${BLEMU_LAB_PERIPHERAL_ADDRESS%%,*}\"",
            ]
        }

        /// Runs `body` in a task that SIGINT and SIGTERM cancel. Without this a Ctrl-C would end blemu but not
        /// qemu: the lab starts children in their own process group (`ProcessSpawn`), out of the terminal's reach.
        static func stoppingOnInterrupt<T: Sendable>(
            _ body: @escaping @Sendable () async throws -> T
        ) async throws -> T {
            let task = Task { try await body() }
            let sources = [SIGINT, SIGTERM].map { number in
                // libdispatch sees a signal only when its default action is off; children get their own handlers
                // (timeout and qemu install them), so ignoring here does not leak into the VM's shutdown.
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { task.cancel() }
                source.resume()
                return source
            }
            defer { sources.forEach { $0.cancel() } }
            return try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        }

        /// The `blemu` the VM runs, by its real path (the VM sees the host's root read-only at the same paths): the one
        /// beside this blemu-cli, or the package's /usr/bin/blemu; blemu-cli itself when neither is there.
        static func executablePath() -> String {
            Handover.locate(Handover.serving) ?? Handover.ownPath ?? CommandLine.arguments[0]
        }
    }

    /// `blemu lab air`: the lab's RootCanal air inside its network namespace, then the VM (`RootCanalAir`). The lab
    /// runs it under unshare; people do not.
    struct Air: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run RootCanal and the lab's relay, then the VM command (used by blemu lab run).",
            shouldDisplay: false)

        @Option(help: "The RootCanal executable.")
        var rootcanal: String

        @Option(help: "The VMs to run on the air: a JSON file as blemu lab run writes it (air-plan.json).")
        var plan: String

        func run() throws {
            let data: Data
            let decoded: RootCanalAir.Plan
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: plan))
                decoded = try JSONDecoder().decode(RootCanalAir.Plan.self, from: data)
            } catch {
                Console.write("lab air: cannot read the plan \(plan): \(error)\n")
                throw ExitCode(66)
            }
            guard !decoded.machines.isEmpty, decoded.machines.allSatisfy({ !$0.command.isEmpty && $0.controllers > 0 })
            else {
                Console.write("lab air: the plan \(plan) has no VM, or one without a command\n")
                throw ExitCode(65)
            }
            throw ExitCode(RootCanalAir(rootcanal: rootcanal, plan: decoded).run())
        }
    }

    /// `blemu lab bridge`: joins sockets across a VM's edge, so the command's VM of a fleet reaches the control
    /// sockets of the others (`ControlBridge`). The lab's guest script runs it; people do not.
    struct Bridge: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join connections taken at one socket to another (used by blemu lab run's VMs).",
            shouldDisplay: false)

        @Option(
            name: .customLong("join"),
            help: ArgumentHelp(
                "Connections taken at LISTEN, each carried to DIAL; each side unix:PATH or tcp:HOST:PORT "
                    + "(repeatable).",
                valueName: "listen=dial"))
        var joins: [String] = []

        func run() throws {
            var parsed: [ControlBridge.Join] = []
            for text in joins {
                guard let join = ControlBridge.Join(text) else {
                    let message = "lab bridge: --join \(text): expected unix:PATH or tcp:HOST:PORT on each side of =\n"
                    Console.write(message)
                    throw ExitCode(64)
                }
                parsed.append(join)
            }
            guard !parsed.isEmpty else {
                Console.write("lab bridge: nothing to join: give --join LISTEN=DIAL\n")
                throw ExitCode(64)
            }
            do {
                try ControlBridge.serve(parsed) { line in
                    Console.write("lab bridge: \(line)\n")
                }
            } catch {
                Console.write("lab bridge: \(error.description)\n")
                throw ExitCode(71)
            }
        }
    }

    /// `blemu lab check`: can this machine run the lab, and what to install if not.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether this machine can run the lab, and what to apt-get install if not.",
            discussion: "Exit codes: 0 ready, 69 something required is missing.\n\nExample:\n  blemu lab check")

        func run() async throws {
            let prerequisites = LabPrerequisites.check()
            print(prerequisites.report)
            // The radios (docs/lab.md, "The radio" and "RootCanal's air"): what each needs beyond the rest.
            let btvirt = prerequisites.items.first { $0.name == "btvirt" }
            print("radio   btvirt: " + (btvirt?.isPresent == true ? "can run (the default)" : "cannot run: no btvirt"))
            let rootcanal = LabPrerequisites.check(radio: .rootcanal).items.filter {
                $0.name.hasPrefix("rootcanal") || $0.name == "unshare"
            }
            print(
                "radio   rootcanal: "
                    + (rootcanal.allSatisfy(\.isPresent)
                        ? "can run (--radio rootcanal)"
                        : "cannot run: " + rootcanal.compactMap(\.problem).joined(separator: "; ")))
            let versions = BlueZInstall.available()
            for install in versions { print("bluez   \(install)") }
            let kernels = LabKernel.available()
            for kernel in kernels { print("kernel  \(kernel)") }
            for named in LabSystem.names {
                // The error names exactly the commands that install what is missing.
                do { print("system  \(try LabSystem.resolve(named.name)): \(named.standsFor)") } catch {
                    print("absent  \(error.description)")
                }
            }
            if prerequisites.isSatisfied {
                print(
                    "the lab can run here (kernel \(kernels.map(\.series).joined(separator: ", ")); BlueZ "
                        + "\(versions.map(\.version).joined(separator: ", ")))")
            } else {
                print("the lab cannot run here; or run scripts/setup --lab")
                throw ExitCode(69)
            }
        }
    }
}

/// `path` made absolute against `directory`, with `.` and `..` resolved.
private func absolute(_ path: String, in directory: String) -> String {
    let joined = path.hasPrefix("/") ? path : directory + "/" + path
    return URL(fileURLWithPath: joined).standardizedFileURL.path
}
