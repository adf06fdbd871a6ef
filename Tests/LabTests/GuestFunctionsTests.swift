import Foundation
import Testing

@testable import Lab

/// The guest's shell functions (Sources/Lab/guest-functions.sh) and the scripts that source them, checked without
/// booting anything: the files they write are the ones the host reads, and the shell linter CI runs on the functions
/// finds nothing in what a run generates either.
@Suite struct GuestFunctionsTests {
    static let configuration = LabConfiguration(
        resultsDirectory: "/work/results/r1", controllers: 3, profiles: ["/p/a.yaml", "/p/b.yaml"],
        blemuExecutable: "/opt/blemu/bin/blemu", workingDirectory: "/work/checkout")
    static let bluez = BlueZInstall(
        version: "5.82", bluetoothd: "/cache/bluez/5.82/bin/bluetoothd", toolDirectory: "/cache/bluez/5.82/bin")
    static let copies = [
        GuestStack.Peripheral(profile: "/work/results/r1/profiles/hci0-a.yaml", nameSuffix: nil),
        GuestStack.Peripheral(profile: "/work/results/r1/profiles/hci1-b.yaml", nameSuffix: " 2"),
    ]

    static func stack(_ configuration: LabConfiguration, role: GuestStack.Role = .whole) -> GuestStack {
        // A fleet's central VM serves no profile: its peripherals are the other VMs'.
        let isCentral = if case .central = role { true } else { false }
        var stack = GuestStack(
            configuration: configuration, command: ["python3", "central.py"], bluez: bluez,
            radio: "/cache/bluez/5.82/bin/btvirt", busybox: "/bin/busybox",
            profileCopies: isCentral ? [] : copies)
        stack.role = role
        return stack
    }

    @Test func theFilesTheFunctionsWriteAreTheOnesTheHostReads() throws {
        let pattern = try Regex(#"\$W/([A-Za-z0-9._-]+)"#)
        let written = Set(GuestStack.functions.matches(of: pattern).map { String($0.output[1].substring ?? "") })
        typealias File = GuestStack.File
        #expect(
            written == [
                File.steps, File.failure, File.cores, File.bluetoothdBacktrace, File.btvirt, File.btattach,
                File.controllers, File.kernelRelease, File.btsnoop, File.btmon, File.dbus, File.mainConf,
                File.bluetoothd,
            ])
        #expect(GuestStack.functions.contains("(see blemu-$1.log)") && File.peripheral("$1") == "blemu-$1.log")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/shellcheck"), "needs shellcheck"))
    func everyGeneratedScriptAndTheFunctionsPassTheShellLinter() throws {
        let directory = NSTemporaryDirectory() + "blemu-guest-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var rootcanal = Self.configuration
        rootcanal.radio = .rootcanal
        var views = Self.configuration
        views.liveView = LabLiveView(host: "127.0.0.1", port: 9000, token: "t0k")
        let fleet = GuestStack.Role.central(fleet: [
            GuestStack.FleetMachine(directory: "/work/results/r1/vm1", firstController: 1)
        ])
        let scripts = [
            "whole.sh": Self.stack(Self.configuration).script,
            "rootcanal.sh": Self.stack(rootcanal).script,
            "views.sh": Self.stack(views).script,
            "fleet-central.sh": Self.stack(Self.configuration, role: fleet).script,
            "fleet-peripherals.sh": Self.stack(Self.configuration, role: .peripherals).script,
            GuestStack.File.functions: GuestStack.functions,
        ]
        for (name, text) in scripts {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        // What generating makes of a script the linter cannot know: settings only the sourced functions use (SC2034),
        // a loop over a list of one (SC2041, SC2043), a `case` on two paths written in (SC2194).
        let outcome = try ChildProcess.run(
            ["/usr/bin/shellcheck", "-S", "warning", "-s", "sh", "-e", "SC2034,SC2041,SC2043,SC2194"]
                + scripts.keys.sorted().map { directory + "/" + $0 },
            keepingStderr: true)
        #expect(outcome.status == 0, "\(outcome.output)")
    }
}
