import ArgumentParser
import BlueZModel
import ControlProtocol
import DBus
import Emulation
import Logging

/// `blemu doctor`: what is wrong with this host for serving a peripheral, and the one thing to do about each.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check this host for serving a BLE peripheral: bus, bluetoothd, adapter, advertising, policy.",
        discussion: """
            One line per check: ok, warn, fail or skip, what was found, and for anything not ok the one thing to do. \
            The checks: the bus and bluetoothd (its version and path), the kernel, the bus policy for this user, the \
            adapter (listing those there are), its radio switch, power, LE and the peripheral role, free advertising \
            instances, extended advertising, the main.conf settings that change what a central sees, known bad \
            kernel/BlueZ pairs, and a trial: an application and an advertisement registered and unregistered, with \
            what bluetoothd answered (--no-trial skips it). --json prints {"verdict", "checks": [{"id", "status", \
            "detail", "fix"}]}; the ids are stable (docs/bluez.md, "blemu doctor").

            Example:
              blemu doctor --adapter hci1

            Exit codes: 0 nothing failed (warnings allowed); 64 usage; 69 a check failed.
            """)

    @Option(help: "The adapter blemu would serve on.")
    var adapter = "hci0"

    @Option(help: "The bus: system (default), session, or a D-Bus address such as unix:path=/run/bus.")
    var bus = BusAddress.system

    @Option(
        help: "bluetoothd's main.conf (default: the file bluetoothd was started with, else /etc/bluetooth/main.conf).")
    var mainConf: String?

    @Flag(help: "Print the checks as JSON.")
    var json = false

    @Flag(name: .customLong("no-trial"), help: "Skip registering a trial application and advertisement.")
    var noTrial = false

    func run() async throws {
        var logger = Logger(label: "blemu.doctor", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .critical
        let findings = await HostDoctor(
            bus: bus, adapter: adapter, mainConf: mainConf, runsTrial: !noTrial, logger: logger
        ).run()
        let verdict = Self.verdict(findings)
        print(json ? Self.json(findings, verdict: verdict) : Self.text(findings, verdict: verdict))
        if verdict == .fail { throw ExitCode(69) }
    }

    /// The worst status of any check but a skip: fail, warn, else ok.
    static func verdict(_ findings: [HostFinding]) -> HostFinding.Status {
        findings.map(\.status).filter { $0 != .skip }.max() ?? .ok
    }

    /// `ok    bluetoothd: bluetoothd 5.82 owns org.bluez`, then `      fix: ...` under anything not ok.
    static func text(_ findings: [HostFinding], verdict: HostFinding.Status) -> String {
        var lines: [String] = []
        for finding in findings {
            let name = finding.status.rawValue
            let status = name + String(repeating: " ", count: max(0, 5 - name.count))
            lines.append("\(status) \(finding.id): \(finding.detail)")
            if let fix = finding.fix { lines.append("      fix: \(fix)") }
        }
        let failed = findings.filter { $0.status == .fail }.count
        let warned = findings.filter { $0.status == .warn }.count
        lines.append("verdict: \(verdict.rawValue) (\(failed) failed, \(warned) warnings)")
        return lines.joined(separator: "\n")
    }

    /// The JSON document scripts read; `fix` is null where there is nothing to do.
    static func json(_ findings: [HostFinding], verdict: HostFinding.Status) -> String {
        let checks: [JSONValue] = findings.map { finding in
            .object([
                "id": .string(finding.id), "status": .string(finding.status.rawValue),
                "detail": .string(finding.detail), "fix": finding.fix.map(JSONValue.string) ?? .null,
            ])
        }
        return JSONValue.object(["verdict": .string(verdict.rawValue), "checks": .array(checks)]).prettyText
    }
}
