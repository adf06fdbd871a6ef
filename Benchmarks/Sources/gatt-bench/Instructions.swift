import Foundation
import Glibc

/// The steady measure beside the timed table: instructions each contender executes per request, counted by
/// valgrind's callgrind. Rates on a shared 2-core machine swing by 20-40 points between runs; an instruction count
/// does not depend on what else the machine does, so a change to the request path shows its effect here even when
/// the timed rows cannot tell it from noise. `gatt-bench --instructions` (Benchmarks/run-gatt --instructions).
///
/// Each contender runs under `valgrind --tool=callgrind`; around each workload the counters are zeroed and dumped
/// (`callgrind_control --zero` / `--dump`), so a row counts that workload's requests and nothing of the start-up.
enum InstructionCount {
    /// The shapes counted: the round trips of the timed table's worst rows, each for a fixed time under valgrind.
    static let shapes: [(name: String, write: Bool, size: Int, inFlight: Int)] = [
        ("read 20 B, 1 in flight", false, 20, 1), ("read 20 B, 16 in flight", false, 20, 16),
        ("write 20 B, 1 in flight", true, 20, 1), ("write 20 B, 16 in flight", true, 20, 16),
    ]

    /// The CLI's shapes with a handler answering rw20 over the control socket (`{"answer":N}` at once): what a handler
    /// round trip costs blemu beside the plain rows.
    static let handlerShapes: [(name: String, write: Bool)] = [
        ("read 20 B through a handler", false), ("write 20 B through a handler", true),
    ]

    /// The CLI's write to a characteristic a protocol answers with a reply (Benchmarks/profiles/bench.yaml's
    /// `control`): the request read by its layout, a case chosen, the value stored and a notification built and handed
    /// to the emulator, with no central subscribed (what delivery costs is the notification rows').
    static let protocolShape = "write 20 B to a protocol with a reply"

    /// Runs the instruction count for the C app and blemu's library and CLI; prints a table of instructions per
    /// request (and per write without response) and returns false when a contender failed.
    static func run(_ options: GattBench.Options) async throws -> Bool {
        try await GattBench.withRig { launcher in try await run(options, launcher: launcher) }
    }

    private static func run(_ options: GattBench.Options, launcher: Launcher) async throws -> Bool {
        let workspace = launcher.workspace
        let wanted = ["c", "blemu-lib", "blemu-cli"]
        let seconds = options.quick ? 1.0 : 3.0
        var rows: [String: [String: Double]] = [:]
        var failed: [String] = []
        for var contender in try GattBench.contenders(options) where wanted.contains(contender.key) {
            guard contender.skip == nil else { continue }
            let output = "\(workspace)/\(contender.key).callgrind"
            let command = contender.command
            contender.command = { extra, workspace in
                ["/usr/bin/valgrind", "--tool=callgrind", "--callgrind-out-file=\(output)", "--trace-children=no"]
                    + (try command(extra, workspace))
            }
            progress("\(contender.name): under callgrind")
            let target: Target
            do { target = try await launcher.start(contender, extra: 0).target } catch {
                failed.append("\(contender.name): \(error)")
                continue
            }
            defer { target.child.stop() }
            for shape in shapes {
                let role: Role = .rw20
                _ = try? shell("callgrind_control --zero \(target.child.pid) >/dev/null")
                let result = await target.roundTrips(
                    write: shape.write, role: role, size: shape.size, inFlight: shape.inFlight, seconds: seconds)
                guard let instructions = dump(target.child.pid, output: output), result.calls > 0 else {
                    failed.append("\(contender.name) \(shape.name): \(result.note ?? "no callgrind dump")")
                    continue
                }
                // The workload writes the value once before it starts: one more request than it counts.
                rows[contender.key, default: [:]][shape.name] = Double(instructions) / Double(result.calls + 1)
                progress("\(contender.name) \(shape.name): \(result.calls) calls")
            }
            // Writes without response have no answer to count, so the workload asks the app how many arrived: a
            // D-Bus read of the C app and the library, a control-socket `counters` of the CLI (a connection and a
            // JSON answer, dearer). What one question costs is counted apart and taken out, so the row is the writes'.
            _ = try? shell("callgrind_control --zero \(target.child.pid) >/dev/null")
            let questions = 5
            for _ in 0..<questions { _ = await target.writesReceived() }
            let perQuestion = dump(target.child.pid, output: output).map { Double($0) / Double(questions) } ?? 0
            _ = try? shell("callgrind_control --zero \(target.child.pid) >/dev/null")
            let delivery = await target.writesWithoutResponse(count: options.quick ? 200 : 1_000)
            if let instructions = dump(target.child.pid, output: output), delivery.received > 0 {
                rows[contender.key, default: [:]]["write without response"] =
                    (Double(instructions) - perQuestion * Double(delivery.polls)) / Double(delivery.received)
            }
            // The CLI's profile answers `control` with a protocol; the others give it the benchmark's own meaning.
            if contender.key == "blemu-cli" {
                _ = try? shell("callgrind_control --zero \(target.child.pid) >/dev/null")
                let result = await target.roundTrips(
                    write: true, role: .control, size: 20, inFlight: 1, seconds: seconds)
                if let instructions = dump(target.child.pid, output: output), result.calls > 0 {
                    rows[contender.key, default: [:]][protocolShape] = Double(instructions) / Double(result.calls + 1)
                    progress("\(contender.name) \(protocolShape): \(result.calls) calls")
                } else {
                    failed.append("\(contender.name) \(protocolShape): \(result.note ?? "no callgrind dump")")
                }
            }
            // Last, as it changes who answers rw20: the CLI's requests through a handler on its control socket.
            if let socket = contender.controlSocket {
                switch attachAnsweringHandler(socket, id: Role.rw20.rawValue) {
                case .failure(let error): failed.append("\(contender.name) handler: \(error)")
                case .success(let handler):
                    defer { close(handler) }
                    for shape in handlerShapes {
                        _ = try? shell("callgrind_control --zero \(target.child.pid) >/dev/null")
                        let result = await target.roundTrips(
                            write: shape.write, role: .rw20, size: 20, inFlight: 1, seconds: seconds)
                        guard let instructions = dump(target.child.pid, output: output), result.calls > 0 else {
                            failed.append("\(contender.name) \(shape.name): \(result.note ?? "no callgrind dump")")
                            continue
                        }
                        rows[contender.key, default: [:]][shape.name] = Double(instructions) / Double(result.calls + 1)
                        progress("\(contender.name) \(shape.name): \(result.calls) calls")
                    }
                }
            }
        }
        print(table(rows))
        for failure in failed { printError("gatt-bench: \(failure)") }
        return failed.isEmpty
    }

    /// Dumps the counters since the last zero and returns the dump's total instructions (`summary:`/`totals:`).
    static func dump(_ pid: pid_t, output: String) -> Int? {
        let before = Set(dumpFiles(output))
        guard (try? shell("callgrind_control --dump \(pid) >/dev/null")) == 0 else { return nil }
        let new = dumpFiles(output).filter { !before.contains($0) }.sorted()
        guard let file = new.last, let text = readText(file) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
            if let value = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) { return value }
        }
        return nil
    }

    /// The numbered dump files callgrind wrote beside `output` (`output.1`, `output.2`, ...).
    static func dumpFiles(_ output: String) -> [String] {
        let directory = (output as NSString).deletingLastPathComponent
        let prefix = (output as NSString).lastPathComponent + "."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix(prefix) }.map { directory + "/" + $0 }
    }

    /// One row per shape, one column per contender, with each blemu's ratio to the C app.
    static func table(_ rows: [String: [String: Double]]) -> String {
        let columns = [("c", "C libdbus"), ("blemu-lib", "blemu library"), ("blemu-cli", "blemu CLI")]
        var lines = ["| instructions per request | " + columns.map(\.1).joined(separator: " | ") + " |"]
        lines.append("|---|" + String(repeating: "---|", count: columns.count))
        for name in shapes.map(\.name) + ["write without response", protocolShape] + handlerShapes.map(\.name) {
            let c = rows["c"]?[name]
            let cells = columns.map { key, _ -> String in
                guard let value = rows[key]?[name] else { return "n/a" }
                let ratio = key == "c" ? "" : c.map { String(format: " (%.1fx C)", value / $0) } ?? ""
                return String(format: "%.0f", value) + ratio
            }
            lines.append("| \(name) | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }
}
