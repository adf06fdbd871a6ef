import FoundationEssentials
import LocalIO

/// What a CI system reads after a lab run: `summary.json` in the results directory, and one line for people.
///
/// Each peripheral's counters are what its own `blemu run` answered to `ctl counters` after COMMAND ended, read in
/// the VM before power-off (`counters-hciN.json`), so "requests = answered" is the peripheral's word, not a guess.
public struct LabSummary: Codable, Sendable, Equatable {
    /// One peripheral's final counters; nil fields when its control socket did not answer.
    public struct Peripheral: Codable, Sendable, Equatable {
        /// Its controller: "hci0".
        public let controller: String
        /// The profile it served (the absolute path of the user's file).
        public let profile: String
        /// ATT requests that reached blemu.
        public let requests: Int?
        /// Requests blemu answered (with a value or an ATT error).
        public let answered: Int?
        /// Requests never answered: `requests - answered` (bluetoothd answered them itself after its timeout).
        public let unanswered: Int?
        /// Notifications and indications the emulator queued.
        public let notificationsQueued: Int?
        /// Those bluetoothd accepted for the central.
        public let notificationsSent: Int?
        /// Those dropped (no subscriber left, or the queue overflowed).
        public let notificationsDropped: Int?
        /// Its `blemu run`'s peak resident set in KiB (VmHWM) as the run ended; nil when it was not read.
        public let peakMemoryKiB: Int?
    }

    /// `bluetoothd --version` of the BlueZ that booted.
    public let bluezVersion: String
    /// `uname -r` of the kernel that booted; nil when the VM did not say.
    public let kernelRelease: String?
    /// Seconds from qemu start until COMMAND began.
    public let bootSeconds: Double?
    /// COMMAND's exit code.
    public let exitCode: Int32
    /// Seconds COMMAND ran, by the VM's clock.
    public let commandSeconds: Double?
    /// Seconds from qemu start to its exit.
    public let totalSeconds: Double
    /// Every peripheral, hci0 first (a fleet over VMs: vm1's first, each named `vmN/hciM`).
    public let peripherals: [Peripheral]
    /// The fleet's VMs that never served, each with why ("vm2: power: gave up after 60 s..."); empty when all did.
    public let failedMachines: [String]

    /// The file name in the results directory.
    public static let file = "summary.json"

    /// The summary of `run`, whose peripherals served `profiles` in order.
    public init(run: LabRun, profiles: [String]) {
        bluezVersion = run.bluezVersion
        kernelRelease = run.kernelRelease
        bootSeconds = run.untilCommand.map(Self.seconds)
        exitCode = run.exitCode
        let uptime = { (name: String) in run.steps.first { $0.name == name }?.guestUptime }
        commandSeconds = uptime("command").flatMap { start in
            uptime("power-off").map { (($0 - start) * 10).rounded() / 10 }
        }
        totalSeconds = Self.seconds(run.total)
        failedMachines = ((try? String(contentsOfFile: run.file(GuestStack.File.fleetFailures), encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
        peripherals = zip(run.peripherals, profiles).map { controller, profile in
            // A fleet VM's counters are in its own results directory: "vm1/hci0" reads vm1/counters-hci0.json.
            let parts = controller.split(separator: "/", maxSplits: 1).map(String.init)
            let directory = parts.count == 2 ? parts[0] + "/" : ""
            let name = parts.last ?? controller
            let counters = Self.counters(in: run.file(directory + "counters-\(name).json"))
            let memory =
                (try? String(contentsOfFile: run.file(directory + GuestStack.File.peakMemory(name)), encoding: .utf8))
                .flatMap { Int($0.trimmingWhitespace()) }
            let requests = counters["requests"]
            let answered = counters["answered"]
            return Peripheral(
                controller: controller, profile: profile, requests: requests, answered: answered,
                unanswered: requests.flatMap { requests in answered.map { requests - $0 } },
                notificationsQueued: counters["notificationsQueued"], notificationsSent: counters["notificationsSent"],
                notificationsDropped: counters["notificationsDropped"], peakMemoryKiB: memory)
        }
    }

    /// "exit 0 on BlueZ 5.66, kernel 6.1.0-41-amd64: boot 17.2 s, command 24.6 s; hci0 12 requests, 12 answered,
    /// 30 notifications sent".
    public var line: String {
        let kernel = kernelRelease.map { ", kernel \($0)" } ?? ""
        var parts = ["exit \(exitCode) on BlueZ \(bluezVersion)\(kernel): boot \(Self.format(bootSeconds))"]
        parts[0] += ", command \(Self.format(commandSeconds))"
        for peripheral in peripherals {
            guard let requests = peripheral.requests, let answered = peripheral.answered else {
                parts.append("\(peripheral.controller) counters unavailable")
                continue
            }
            var text = "\(peripheral.controller) \(requests) requests, \(answered) answered"
            if let sent = peripheral.notificationsSent { text += ", \(sent) notifications sent" }
            if let unanswered = peripheral.unanswered, unanswered != 0 { text += " (\(unanswered) UNANSWERED)" }
            parts.append(text)
        }
        for failed in failedMachines { parts.append("FAILED \(failed)") }
        return parts.joined(separator: "; ")
    }

    /// Writes `summary.json` into `directory`.
    public func write(to directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(self).write(to: URL(fileURLWithPath: directory + "/" + Self.file))
    }

    /// The integer counters of a `ctl counters` response file; empty when missing or not that shape.
    static func counters(in path: String) -> [String: Int] {
        guard let data = FileManager.default.contents(atPath: path),
            let response = try? JSONDecoder().decode(CountersResponse.self, from: data)
        else { return [:] }
        return response.counters.compactMapValues(\.value)
    }

    /// A `ctl counters` response as far as the summary reads it: the counters, each an integer or not counted.
    private struct CountersResponse: Decodable {
        let counters: [String: Counter]

        /// One counter's value, nil when it is not an integer.
        struct Counter: Decodable {
            let value: Int?
            init(from decoder: any Decoder) throws { value = try? decoder.singleValueContainer().decode(Int.self) }
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        ((Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) * 10).rounded() / 10
    }

    private static func format(_ seconds: Double?) -> String {
        seconds.map { String(cFormat: "%.1f s", $0) } ?? "?"
    }
}
