import DBus
import Foundation
import Glibc

/// The GATT benchmark: a fake bluetoothd on a private bus drives the same characteristics in every
/// contender (blemu's CLI and library, a minimal C libdbus app, the Python peers bless and bluez-peripheral, BlueZ's
/// example-gatt-server) and prints one table with ratios against the C limit and the best Python peer.
/// Not a test: a slow figure is a MISS in the table, never a failure. Started by `Benchmarks/run-gatt`:
///   gatt-bench --out FILE [--quick] [--instructions | --durable] [--contender KEY=PATH ...] [--skip KEY=REASON ...]
///     --profile PATH
@main
struct GattBench {
    struct Options {
        var quick = false
        /// Count instructions per request under callgrind instead of timing (`InstructionCount`).
        var instructions = false
        /// Measure what durable writes (`--restore-id`) cost instead (`DurableWrites`).
        var durable = false
        var out = ""
        var profile = ""
        var paths: [String: String] = [:]
        var skips: [String: String] = [:]
    }

    static func main() async {
        var options = Options()
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = arguments.next() {
            switch argument {
            case "--quick": options.quick = true
            case "--instructions": options.instructions = true
            case "--durable": options.durable = true
            case "--out": options.out = arguments.next() ?? ""
            case "--profile": options.profile = arguments.next() ?? ""
            case "--contender", "--skip":
                let pair = arguments.next() ?? ""
                let key = String(pair.prefix { $0 != "=" })
                let value = String(pair.dropFirst(key.count + 1))
                if argument == "--skip" { options.skips[key] = value } else { options.paths[key] = value }
            default:
                printError(
                    "usage: gatt-bench --out FILE --profile PATH [--quick] [--instructions | --durable] [--contender KEY=CMD] [--skip KEY=WHY]"
                )
                exit(64)
            }
        }
        do {
            if options.instructions { exit(try await InstructionCount.run(options) ? 0 : 1) }
            if options.durable { exit(try await DurableWrites.run(options) ? 0 : 1) }
            let report = try await run(options)
            exit(report.erroredContenders.isEmpty ? 0 : 1)
        } catch {
            printError("gatt-bench: \(error)")
            exit(70)
        }
    }

    /// How many different centrals read in the centrals workload.
    static let centralCounts = [1, 10, 100]

    static func contenders(_ options: Options) throws -> [Contender] {
        let base = readText(options.profile) ?? ""
        guard !base.isEmpty else { throw BenchError("cannot read the profile \(options.profile)") }
        let options = options
        @Sendable func profileFile(_ extra: Int, _ workspace: String) throws -> String {
            guard extra > 0 else { return options.profile }
            let file = "\(workspace)/bench-\(extra).yaml"
            if readText(file) == nil { try writeText(file, scaledProfile(base: base, extra: extra)) }
            return file
        }
        var list: [Contender] = []
        let path = { @Sendable (key: String) in options.paths[key] ?? "" }
        list.append(
            Contender(name: "C libdbus", key: "c", isLimit: true) { extra, _ in [path("c"), "--extra", "\(extra)"] })
        list.append(
            Contender(name: "blemu library", key: "blemu-lib", isBlemu: true) { extra, workspace in
                [path("blemu-lib"), try profileFile(extra, workspace)]
            })
        // Its notifications are triggered through its control socket (`ctl notify`), one command per notification.
        let socket = "/tmp/blemu-gatt-\(getpid())/cli.sock"
        list.append(
            Contender(
                name: "blemu CLI", key: "blemu-cli", isBlemu: true,
                writeCount: .controlCounters, controlSocket: socket
            ) { extra, workspace in
                [
                    path("blemu-cli"), "run", try profileFile(extra, workspace), "--bus", "ADDRESS", "--adapter",
                    "hci0",
                    "--control", socket,
                ]
            })
        for (key, name) in [("bless", "bless"), ("bluez-peripheral", "bluez-peripheral")] {
            list.append(
                Contender(name: name, key: key, isPythonPeer: true) { extra, _ in
                    [path("python"), path(key), "--extra", "\(extra)"]
                })
        }
        // BlueZ's test/example-gatt-server: its test characteristic ...def1 is read/write and stores any value; it
        // has no write-without-response characteristic, no advertisement and only a timer for notifications.
        var example = Contender(
            name: "example-gatt-server", key: "example-gatt-server", advertises: false,
            writeCount: .none("n/a: example-gatt-server has no write-without-response characteristic"),
            noTrigger: "n/a: example-gatt-server notifies from a 1 s / 5 s timer only", baseCharacteristics: nil,
            supportsScaling: false
        ) { _, _ in ["/usr/bin/python3", path("example-gatt-server")] }
        example.roles = [.rw20: "12345678-1234-5678-1234-56789abcdef1", .rw512: "12345678-1234-5678-1234-56789abcdef1"]
        list.append(example)
        for index in list.indices {
            let key = list[index].key
            if let why = options.skips[key] {
                list[index].skip = why
            } else if key == "bless" || key == "bluez-peripheral" {
                if options.paths["python"] == nil || options.paths[key] == nil { list[index].skip = "no Python venv" }
            } else if options.paths[key] == nil {
                list[index].skip = "not built"
            }
        }
        return list
    }

    /// Runs `body` with a launcher on a fresh workspace, a private bus and the fake bluetoothd on it; removes
    /// them all afterwards, the workspace too unless `GATT_BENCH_KEEP` is set (its callgrind dumps and contenders'
    /// logs are then left for `callgrind_annotate`, and its path is printed).
    static func withRig<T>(_ body: (Launcher) async throws -> T) async throws -> T {
        let workspace = "/tmp/blemu-gatt-\(getpid())"
        mkdir(workspace, 0o700)
        defer {
            if getenv("GATT_BENCH_KEEP") == nil {
                _ = try? shell("rm -rf '\(workspace)'")
            } else {
                progress("kept \(workspace)")
            }
        }
        let (address, bus) = try startBus(workspace: workspace)
        defer { bus.stop() }
        let fake = try await FakeBluetoothd(address: address)
        defer { fake.close() }
        return try await body(Launcher(fake: fake, address: address, workspace: workspace))
    }

    static func run(_ options: Options) async throws -> Report {
        try await withRig { launcher in try await run(options, launcher: launcher) }
    }

    static func run(_ options: Options, launcher: Launcher) async throws -> Report {
        let all = try contenders(options)
        var report = Report(quick: options.quick)
        for contender in all {
            report.contenders[contender.key] = ContenderResult(name: contender.name, key: contender.key)
            if let why = contender.skip { report.contenders[contender.key]?.skipped = why }
        }
        let runnable = all.filter { $0.skip == nil }

        // Phase 1: start-up and registration as the tree grows; each start alone, contenders alternating.
        let samples = options.quick ? 1 : 3
        let sizes = options.quick ? [0, 100] : [0, 10, 100, 1000]
        for sample in 0..<samples {
            for extra in sizes {
                let order = sample % 2 == 0 ? runnable : runnable.reversed()
                for contender in order where extra == 0 || contender.supportsScaling {
                    if report.contenders[contender.key]?.scalingFailures[extra] != nil { continue }
                    guard report.contenders[contender.key]?.error == nil else { continue }
                    do {
                        let target = try await launcher.start(contender, extra: extra)
                        let registration = Double(target.readyAt - target.target.child.startedAt) / 1e6
                        let rss = target.target.child.peakRSS() ?? 0
                        target.target.child.stop()
                        report.contenders[contender.key]?.scaling[extra, default: []].append(
                            Scale(
                                characteristics: target.target.application.characteristicCount,
                                registrationMilliseconds: registration, peakRSSKilobytes: rss))
                        progress(
                            "\(contender.name): \(extra) extra characteristics registered in \(Int(registration)) ms, \(rss) kB"
                        )
                    } catch {
                        // A failure to register the base profile is the contender's error; a failure with more
                        // characteristics is a scaling result, and the workloads still run.
                        if extra == 0 {
                            report.contenders[contender.key]?.error = "start-up: \(error)"
                        } else {
                            report.contenders[contender.key]?.scalingFailures[extra] = "\(error)"
                        }
                        progress("\(contender.name): ERROR with \(extra) extra characteristics: \(error)")
                    }
                }
            }
        }

        // Phase 2: every contender running at once; each round runs every workload on every contender, the order
        // alternating, and the median round is reported.
        var targets: [Target] = []
        for contender in runnable where report.contenders[contender.key]?.error == nil {
            do {
                targets.append(try await launcher.start(contender, extra: 0).target)
            } catch {
                report.contenders[contender.key]?.error = "start-up: \(error)"
            }
        }
        defer { for target in targets { target.child.stop() } }
        let rounds = options.quick ? 1 : 3
        let seconds = options.quick ? 0.25 : 1.0
        let writes = options.quick ? 500 : 5_000
        let notifications = options.quick ? 500 : 5_000
        for round in 0..<rounds {
            for target in round % 2 == 0 ? targets : targets.reversed() {
                let key = target.contender.key
                progress("round \(round + 1)/\(rounds): \(target.contender.name)")
                for (write, role, size) in [
                    (false, Role.rw20, 20), (false, .rw512, 512), (true, .rw20, 20), (true, .rw512, 512),
                ] {
                    for inFlight in [1, 16] {
                        let result = await target.roundTrips(
                            write: write, role: role, size: size, inFlight: inFlight, seconds: seconds)
                        let name = "\(write ? "write" : "read") \(size) B, \(inFlight) in flight"
                        report.contenders[key]?.roundTrips[name, default: []].append(result)
                    }
                }
                // bluetoothd names the device in every call: does anything grow with the number of centrals?
                for centrals in Self.centralCounts {
                    let result = await target.roundTrips(
                        write: false, role: .rw20, size: 20, inFlight: 16, seconds: seconds, centrals: centrals)
                    report.contenders[key]?.centrals[centrals, default: []].append(result)
                }
                report.contenders[key]?.writesWithoutResponse.append(await target.writesWithoutResponse(count: writes))
                // Bursts go last, in the last round only: a peer that breaks under them (dbus_next 0.2.3 drops its bus
                // connection when a send would block) must not turn every later round into timeouts.
                guard round == rounds - 1 else { continue }
                report.contenders[key]?.notifyProperties.append(
                    await target.notifications(acquire: false, count: notifications))
                report.contenders[key]?.notifySocket.append(
                    await target.notifications(acquire: true, count: notifications))
            }
        }
        for target in targets {
            report.contenders[target.contender.key]?.peakRSSKilobytes = target.child.peakRSS()
            if target.child.exitStatus() != nil {
                report.contenders[target.contender.key]?.error =
                    "exited during the workloads: \(target.child.logTail())"
            }
        }
        report.finish(all)
        print(report.table(all))
        if !options.out.isEmpty {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: options.out))
            print("JSON: \(options.out)")
        }
        return report
    }
}

func progress(_ line: String) { printError("gatt-bench: \(line)") }

/// Starts contenders with the private bus as their system bus and waits for the fake to see them registered.
struct Launcher {
    let fake: FakeBluetoothd
    let address: String
    let workspace: String

    struct Started {
        var target: Target
        var readyAt: UInt64
    }

    func start(_ contender: Contender, extra: Int) async throws -> Started {
        let command = try contender.command(extra, workspace).map { $0 == "ADDRESS" ? address : $0 }
        let log = "\(workspace)/\(contender.key)-\(extra)-\(monotonic()).log"
        let child = try Child(
            command, environment: ["DBUS_SYSTEM_BUS_ADDRESS": address, "PYTHONDONTWRITEBYTECODE": "1"], log: log)
        let expected = contender.baseCharacteristics.map { $0 + extra } ?? 1
        let deadline = monotonic() + 90_000_000_000
        var sender: String?
        var checked: Set<String> = []
        while monotonic() < deadline {
            if let status = child.exitStatus() {
                throw BenchError("exited (status \(status)) before registering: \(child.logTail())")
            }
            if sender == nil {
                for application in fake.applications() where !checked.contains(application.sender) {
                    checked.insert(application.sender)
                    let pid = try? await fake.connection.call(
                        "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                        member: "GetConnectionUnixProcessID", arguments: [.string(application.sender)])
                    if case .uint32(let value)? = pid?.first, Int32(value) == child.pid { sender = application.sender }
                }
            }
            if let sender {
                if let failure = fake.failure(sender) {
                    child.stop()
                    throw BenchError(failure)
                }
                if let application = fake.application(of: sender), application.characteristicCount >= expected {
                    let advertised = fake.advertisedAt(sender)
                    if !contender.advertises || advertised != nil {
                        let target = Target(contender: contender, child: child, application: application, fake: fake)
                        return Started(target: target, readyAt: max(application.registeredAt, advertised ?? 0))
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        child.stop()
        throw BenchError("not registered within 90 s: \(child.logTail())")
    }
}
