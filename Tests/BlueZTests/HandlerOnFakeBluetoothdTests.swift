import BlueZTesting
import ControlProtocol
import Foundation
import GATTModel
import Testing

/// `blemu run --handler` against the fake bluetoothd: examples/vendor-lamp's Python handler (the package's
/// `on_write`) answers a vendor protocol with CRC-checked frames through bluetoothd's D-Bus calls, dies, is started
/// again, and every request keeps its one answer throughout.
@Suite struct HandlerOnFakeBluetoothdTests: BlemuRunRig {
    static let command: AttributeReference = "7a1b0002-4c55-4d4f-8000-00805f9b34fb"
    static let response: AttributeReference = "7a1b0003-4c55-4d4f-8000-00805f9b34fb"
    static let light: AttributeReference = "7a1b0004-4c55-4d4f-8000-00805f9b34fb"

    /// CRC-8, polynomial 0x07, initial 0: the lamp's, written again here from its description so the test does not
    /// take the handler's word for it.
    static func crc8(_ bytes: [UInt8]) -> UInt8 {
        var crc: UInt8 = 0
        for byte in bytes {
            crc ^= byte
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }

    static func frame(_ command: UInt8, _ payload: [UInt8] = []) -> [UInt8] {
        let body = [UInt8(payload.count + 1), command] + payload
        return [0x5A] + body + [crc8(body)]
    }

    /// The process ids the handler printed (`lamp handler (pid N)`), one per start, in order.
    static func handlerPIDs(in stderr: String) -> [pid_t] {
        stderr.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("lamp handler (pid ") else { return nil }
            return pid_t(line.dropFirst("lamp handler (pid ".count).prefix { $0.isNumber })
        }
    }

    @Test func aPythonHandlerAnswersTheLampsFramesAndIsStartedAgainAfterItDies() async throws {
        let (bus, fake, directory) = try await rig()
        let control = directory + "/control.sock"
        let root = ChildProcess.repositoryRoot
        let run = try ChildProcess(
            "/usr/bin/env",
            [
                "PYTHONDONTWRITEBYTECODE=1", ChildProcess.blemu, "run", root + "/examples/vendor-lamp/lamp.yaml",
                "--bus", bus.address, "--control", control, "--events", directory + "/events.jsonl",
                "--handler", "python3 \(root)/examples/vendor-lamp/lamp_handler.py",
            ], outputIn: directory)
        defer { withExtendedLifetime(fake) {} }
        try #require(
            await FileWait.until(run.stderrPath, contains: "answering writes", within: .seconds(30)),
            "\(run.stdout)\(run.stderr)")
        let central = try await fake.connect(address: "11:22:33:44:55:0A")
        #expect(await fake.subscribe(Self.response, by: central) == nil)

        // Each command: the Write Response, then its response frame notified, CRC and all.
        let exchanges: [([UInt8], [UInt8])] = [
            (Self.frame(0x10), Self.frame(0x90, Array("LUMO-1.4.2".utf8))),
            (Self.frame(0x02, [0x01]), Self.frame(0x82, [0x00])),
            (Self.frame(0x04, [150]), Self.frame(0x84, [0x02])),
            (Self.frame(0x03, [0x10, 0x20, 0x30]), Self.frame(0x83, [0x00])),
            (Self.frame(0x01), Self.frame(0x81, [0x01, 100, 0x10, 0x20, 0x30])),
            ([0x5A, 0x01, 0x10, 0x00], Self.frame(0xFF, [0x01, 0x10])),  // a bad CRC
            (Self.frame(0x7E), Self.frame(0xFF, [0x02, 0x7E])),  // an unknown command
        ]
        for (written, expected) in exchanges {
            #expect(await fake.write(Self.command, written, by: central) == nil)
            let notified = await first(of: central.notifications)
            #expect(notified?.value == expected, "\(written) -> \(String(describing: notified?.value))")
        }
        // Not a frame: refused at the ATT level with the vendor's error, nothing notified.
        #expect(await fake.write(Self.command, [0x01, 0x02], by: central) == ATTError(rawValue: 0x80))
        // The state the handler set is what a central reads.
        #expect(await fake.read(Self.light, by: central) == .success([0x01, 100, 0x10, 0x20, 0x30]))

        // The handler dies: said on stderr, and meanwhile the profile answers its requests (stored, no frame back).
        let firstPID = try #require(Self.handlerPIDs(in: run.stderr).first)
        kill(firstPID, SIGKILL)
        #expect(
            await FileWait.until(run.stderrPath, contains: "(killed by signal 9); its requests get their fallback"),
            "\(run.stderr)")
        #expect(await fake.write(Self.command, Self.frame(0x01), by: central) == nil)
        // Started again: it answers as before.
        #expect(
            await FileWait.until(run.stderrPath, within: .seconds(30)) { Self.handlerPIDs(in: $0).count == 2 },
            "\(run.stderr)")
        #expect(await fake.write(Self.command, Self.frame(0x10), by: central) == nil)
        #expect(await first(of: central.notifications)?.value == Self.frame(0x90, Array("LUMO-1.4.2".utf8)))

        let response = try await offPoolSend(ControlClient(path: control), ["command": "counters"])
        let counters = try JSONValue(parsing: response)["counters"]?.object?.compactMapValues(\.integer) ?? [:]
        // 1 subscription aside: 7 exchanges, the refused non-frame, the read, the write while it was down, the last.
        #expect(counters["requests"] == 11 && counters["answered"] == 11, "\(counters)")
        // The write while it was down reached no handler, or (the socket's end not yet seen) its fallback.
        let fallbacks = counters["handlerFallbacks"] ?? -1
        #expect(counters["handlerAnswered"] == 9 && (0...1).contains(fallbacks), "\(counters)")
        #expect(counters["handlerRequests"] == 9 + fallbacks && counters["handlerRefused"] == 0, "\(counters)")

        // Stopped with the device: no handler left behind.
        let second = try #require(Self.handlerPIDs(in: run.stderr).last)
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        #expect(Self.hasEnded(second), "the handler outlived blemu run")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `blemu ctl SOCK handle` in a shell's coproc, as docs/control-and-events.md shows it: the request line comes
    /// out, the answer goes in, and the central reads the shell's value through bluetoothd.
    @Test func aShellAnswersThroughCtlHandle() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, _) = try await steerableHeartRate(on: bus, in: directory)
        defer { withExtendedLifetime(fake) {} }
        let script = #"""
            coproc HANDLER { exec "$0" ctl "$1" handle body-sensor-location --operations read; }
            read -r claim <&"${HANDLER[0]}"; echo "$claim" > "$2/claim.json"
            read -r request <&"${HANDLER[0]}"; echo "$request" > "$2/request.json"
            number=$(printf '%s' "$request" | sed 's/.*"request":\([0-9]*\).*/\1/')
            echo "{\"answer\":$number,\"hex\":\"2A\"}" >&"${HANDLER[1]}"
            wait "$HANDLER_PID"
            """#
        try FileManager.default.createDirectory(atPath: directory + "/shell", withIntermediateDirectories: true)
        let shell = try ChildProcess(
            "/bin/bash", ["-c", script, ChildProcess.blemu, control, directory], outputIn: directory + "/shell")
        try #require(await FileWait.until(directory + "/claim.json", contains: "\n"), "\(shell.stderr)")
        #expect(try String(contentsOfFile: directory + "/claim.json", encoding: .utf8).contains(#""ok":true"#))
        let central = try await fake.connect(address: "11:22:33:44:55:0B")
        let read = await fake.read("2a38", by: central)
        #expect(read == .success([0x2A]), "\(read) \(shell.stderr) \(run.stderr)")
        let request = try String(contentsOfFile: directory + "/request.json", encoding: .utf8)
        #expect(request.contains(#""operation":"read""#) && request.contains(#""id":"body-sensor-location""#))
        // With the shell's handler attached, a write is still the profile's: only reads were claimed.
        #expect(await fake.write("2a39", [0x02], by: central) == ATTError(rawValue: 0x80))
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        // The device stopping ends the handler's connection, so ctl ends (0: its claim held), and so does the shell.
        #expect(await shell.exitStatus() == 0, "\(shell.stderr)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Whether `pid` is gone or a zombie: the handler's shell died with it, so nothing here may have reaped it yet.
    static func hasEnded(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        // The state is the field after the parenthesized command name.
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    private func offPoolSend(_ client: ControlClient, _ request: [String: JSONValue]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try client.send(request) }) }.start()
        }
    }
}
