import DBus
import Glibc
import Logging

/// Method round trips per second and latency percentiles between two connections on a private bus, at 1 and 16
/// calls in flight, for the Swift responder (this module) and a minimal C libdbus responder, in the same run.
/// Not a test: nothing here fails on a slow machine. Usage:
///   dbus-bench [--calls N] [--rounds R]          run and print a table and one JSON line
///   dbus-bench respond <address> <name>          (internal) the Swift responder process
@main
struct Bench {
    static let interface = "org.blemu.Bench1"
    static let path: ObjectPath = "/bench"

    static func main() async throws {
        let arguments = CommandLine.arguments
        if arguments.count == 4 && arguments[1] == "respond" {
            try await respond(address: arguments[2], name: arguments[3])
            return
        }
        var calls = 20_000
        var rounds = 5
        var index = 1
        while index < arguments.count {
            switch arguments[index] {
            case "--calls" where index + 1 < arguments.count: calls = Int(arguments[index + 1]) ?? calls; index += 1
            case "--rounds" where index + 1 < arguments.count: rounds = Int(arguments[index + 1]) ?? rounds; index += 1
            default:
                FileHandleOut.error("usage: dbus-bench [--calls N] [--rounds R]")
                exit(64)
            }
            index += 1
        }
        try await run(calls: calls, rounds: rounds)
    }

    /// The Swift responder: Echo(ay) -> ay answered on the loop thread, the module's fast path.
    static func respond(address: String, name: String) async throws {
        var logger = Logger(label: "responder")
        logger.logLevel = .warning
        let connection = try BusConnection(.address(address), logger: logger)
        try connection.export(
            path,
            [
                Interface(
                    interface,
                    methods: [
                        Method("Echo", inputs: "ay", outputs: "ay") { call in
                            let payload = call.arguments
                            call.reply(payload)
                        }
                    ])
            ])
        try await connection.requestName(name)
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    struct Measurement {
        var responder: String
        var inFlight: Int
        var calls: Int
        var callsPerSecond: Double
        var p50: Double
        var p99: Double
        /// The responder process's CPU time per call (all its threads): its own cost, free of client and daemon.
        var responderCPU: Double = 0
    }

    static func run(calls: Int, rounds: Int) async throws {
        let workspace = "/tmp/blemu-bench-\(getpid())"
        mkdir(workspace, 0o700)
        defer { _ = try? Spawned.shell("rm -rf '\(workspace)'") }
        let source = String(#filePath.dropLast("Sources/dbus-bench/Bench.swift".count)) + "c/responder.c"
        let cResponder = workspace + "/responder"
        guard try Spawned.shell("cc -O2 -o '\(cResponder)' '\(source)' $(pkg-config --cflags --libs dbus-1)") == 0
        else {
            FileHandleOut.error("dbus-bench: could not build \(source)")
            exit(69)
        }
        let daemon = try Spawned.daemon(workspace: workspace)
        defer { daemon.stop() }
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let client = try BusConnection(.address(daemon.address), logger: logger)
        defer { client.close() }

        let swiftName = "org.blemu.Bench.Swift"
        let cName = "org.blemu.Bench.C"
        let selfPath = Spawned.executablePath()
        let responders = [
            ("swift", swiftName, try Spawned([selfPath, "respond", daemon.address, swiftName])),
            ("c", cName, try Spawned([cResponder, daemon.address, cName])),
        ]
        defer { for (_, _, process) in responders { process.stop() } }
        for (_, name, _) in responders { try await waitForOwner(of: name, on: client) }

        let payload = DBusValue.bytes((0..<20).map { UInt8($0) })

        var results: [Measurement] = []
        for inFlight in [1, 16] {
            var perResponder: [String: [Measurement]] = [:]
            // The first measurement after a change of pace paid for warming up in early runs: warm both first.
            for (_, name, _) in responders {
                _ = try await measure(client, name, payload, calls: min(calls, 2_000), inFlight: inFlight)
            }
            for round in 0..<rounds {
                // Alternating which responder goes first in each round spreads machine noise over both.
                for (label, name, process) in round % 2 == 0 ? responders.reversed() : responders {
                    let cpuBefore = cpuNanoseconds(of: process.pid)
                    var m = try await measure(client, name, payload, calls: calls, inFlight: inFlight)
                    let cpuAfter = cpuNanoseconds(of: process.pid)
                    m.responderCPU = Double(cpuAfter > cpuBefore ? cpuAfter - cpuBefore : 0) / 1e3 / Double(calls)
                    m.responder = label
                    perResponder[label, default: []].append(m)
                }
            }
            for (label, _, _) in responders {
                let sorted = perResponder[label, default: []].sorted { $0.callsPerSecond < $1.callsPerSecond }
                results.append(sorted[sorted.count / 2])  // the median round
            }
        }
        report(results, calls: calls, rounds: rounds)
    }

    static func waitForOwner(of name: String, on client: BusConnection) async throws {
        for await owner in try await client.nameOwnerChanges(of: name) where owner != nil { return }
    }

    static func measure(
        _ client: BusConnection, _ destination: String, _ payload: DBusValue, calls: Int, inFlight: Int
    ) async throws -> Measurement {
        let start = monotonic()
        let latencies = try await withThrowingTaskGroup(of: UInt64.self) { group in
            var latencies: [UInt64] = []
            latencies.reserveCapacity(calls)
            var launched = 0
            func launch() {
                group.addTask {
                    let began = monotonic()
                    let reply = try await client.call(
                        destination, path: path, interface: interface, member: "Echo", arguments: [payload])
                    guard reply.first == payload else { throw DBusError(name: "bench.WrongReply", message: "\(reply)") }
                    return monotonic() - began
                }
                launched += 1
            }
            while launched < min(inFlight, calls) { launch() }
            while let latency = try await group.next() {
                latencies.append(latency)
                if launched < calls { launch() }
            }
            return latencies.sorted()
        }
        let seconds = Double(monotonic() - start) / 1e9
        func percentile(_ p: Double) -> Double {
            Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1e3
        }
        return Measurement(
            responder: "", inFlight: inFlight, calls: calls, callsPerSecond: Double(calls) / seconds,
            p50: percentile(0.50), p99: percentile(0.99))
    }

    static func report(_ results: [Measurement], calls: Int, rounds: Int) {
        func fixed(_ value: Double, _ digits: Int) -> String {
            var text = String(Int((value * pow(10, Double(digits))).rounded()))
            guard digits > 0 else { return text }
            while text.count <= digits { text = "0" + text }
            text.insert(".", at: text.index(text.endIndex, offsetBy: -digits))
            return text
        }
        func pad(_ text: String, _ width: Int) -> String {
            String(repeating: " ", count: max(0, width - text.count)) + text
        }
        print(
            "D-Bus method round trips, Echo(ay[20]) -> ay, one client, private dbus-daemon; median of \(rounds) rounds of \(calls) calls"
        )
        print("responder  in-flight      calls/s   p50 µs   p99 µs   vs C   responder CPU µs/call")
        var json: [String] = []
        for m in results {
            let c = results.first { $0.responder == "c" && $0.inFlight == m.inFlight }
            let ratio = c.map { m.callsPerSecond / $0.callsPerSecond } ?? 0
            print(
                pad(m.responder, 9) + pad("\(m.inFlight)", 11) + pad(fixed(m.callsPerSecond, 0), 13)
                    + pad(fixed(m.p50, 1), 9) + pad(fixed(m.p99, 1), 9) + pad(fixed(ratio * 100, 1) + "%", 8)
                    + pad(fixed(m.responderCPU, 2), 24))
            json.append(
                "{\"responder\":\"\(m.responder)\",\"inFlight\":\(m.inFlight),\"calls\":\(m.calls),"
                    + "\"callsPerSecond\":\(fixed(m.callsPerSecond, 1)),\"p50Microseconds\":\(fixed(m.p50, 1)),"
                    + "\"p99Microseconds\":\(fixed(m.p99, 1)),\"ratioToC\":\(fixed(ratio, 3)),"
                    + "\"responderCPUMicrosecondsPerCall\":\(fixed(m.responderCPU, 3))}")
        }
        print("JSON: [" + json.joined(separator: ",") + "]")
    }
}

/// CPU time of `pid` in nanoseconds: its process CPU clock (clock_getcpuclockid(3)), which counts every thread,
/// those that have exited too. Summing /proc/<pid>/task/*/schedstat instead drops a thread's time when it exits, so a
/// later reading could be smaller than an earlier one. 0 when the process is gone.
func cpuNanoseconds(of pid: pid_t) -> UInt64 {
    var clock = clockid_t()
    var now = timespec()
    guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &now) == 0 else { return 0 }
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func monotonic() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

enum FileHandleOut {
    static func error(_ text: String) { _ = (text + "\n").withCString { write(2, $0, strlen($0)) } }
}
