import Foundation
import Glibc

/// What durable writes cost (`gatt-bench --durable`, Benchmarks/run-gatt --durable): blemu's CLI without and with
/// `--restore-id`, where each accepted write is acknowledged only once its value is on disk (fsync of the file and of
/// its directory, on the state store's own queue). Two questions: how many acknowledged writes per second, and
/// whether other requests wait behind the disk (reads at 1 in flight, alone and while writes are in flight).
enum DurableWrites {
    /// One configuration's figures.
    struct Row {
        var name: String
        var writesOne: RoundTrip
        var writesMany: RoundTrip
        var readsAlone: RoundTrip
        var readsBesideWrites: RoundTrip
    }

    /// Runs both configurations and prints the table; false when one could not start or a workload failed.
    static func run(_ options: GattBench.Options) async throws -> Bool {
        try await GattBench.withRig { launcher in try await run(options, launcher: launcher) }
    }

    private static func run(_ options: GattBench.Options, launcher: Launcher) async throws -> Bool {
        guard let cli = try GattBench.contenders(options).first(where: { $0.key == "blemu-cli" && $0.skip == nil })
        else {
            printError("gatt-bench: --durable needs the blemu CLI (--contender blemu-cli=PATH)")
            return false
        }
        let seconds = options.quick ? 0.5 : 3.0
        // On the disk the checkout is on, as a user's state directory would be: never tmpfs, where fsync is free.
        let state = FileManager.default.currentDirectoryPath + "/results/durable-state-\(getpid())"
        defer { _ = try? shell("rm -rf '\(state)'") }
        var rows: [Row] = []
        var failed = false
        for durable in [false, true] {
            var contender = cli
            let command = cli.command
            contender.command = { extra, workspace in
                try command(extra, workspace) + (durable ? ["--restore-id", "bench", "--state-dir", state] : [])
            }
            let name = durable ? "blemu CLI, --restore-id" : "blemu CLI"
            let target: Target
            do { target = try await launcher.start(contender, extra: 0).target } catch {
                printError("gatt-bench: \(name): \(error)")
                failed = true
                continue
            }
            defer { target.child.stop() }
            progress("\(name): writes, reads, reads beside writes")
            func trips(_ write: Bool, _ inFlight: Int) async -> RoundTrip {
                await target.roundTrips(write: write, role: .rw20, size: 20, inFlight: inFlight, seconds: seconds)
            }
            let writesOne = await trips(true, 1)
            let writesMany = await trips(true, 16)
            let readsAlone = await trips(false, 1)
            async let writing = trips(true, 16)
            let readsBesideWrites = await trips(false, 1)
            _ = await writing
            let row = Row(
                name: name, writesOne: writesOne, writesMany: writesMany, readsAlone: readsAlone,
                readsBesideWrites: readsBesideWrites)
            let measured = [writesOne, writesMany, readsAlone, readsBesideWrites]
            for trip in measured where trip.errors > 0 || trip.calls == 0 {
                printError("gatt-bench: \(name): \(trip.note ?? "no call answered")")
                failed = true
            }
            rows.append(row)
        }
        print(table(rows))
        return !failed
    }

    static func table(_ rows: [Row]) -> String {
        func rate(_ trip: RoundTrip) -> String { String(format: "%.0f /s", trip.perSecond) }
        func latency(_ trip: RoundTrip) -> String {
            String(format: "%.0f / %.0f µs", trip.p50Microseconds, trip.p99Microseconds)
        }
        var lines = [
            "| durable writes | acknowledged writes, 1 / 16 in flight | reads alone, p50 / p99 | reads beside 16 writes, p50 / p99 |",
            "|---|---|---|---|",
        ]
        for row in rows {
            lines.append(
                "| \(row.name) | \(rate(row.writesOne)) / \(rate(row.writesMany)) | \(latency(row.readsAlone)) | "
                    + "\(latency(row.readsBesideWrites)) |")
        }
        return lines.joined(separator: "\n")
    }
}
