import Foundation

/// A private `dbus-daemon` for level-5 tests: its own socket in a temporary directory, killed on `stop()`.
final class PrivateBus: Sendable {
    /// The address to connect to, e.g. `unix:path=/tmp/…/bus`.
    let address: String
    private let process: Process
    private let directory: URL

    /// Whether the `dbus-daemon` binary is installed (the tests are skipped otherwise).
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") }

    /// Starts the daemon and waits until it listens; throws if it cannot start.
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("blemu-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        let config = directory.appendingPathComponent("bus.conf")
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(config.path)", "--nofork", "--print-address"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The daemon prints its address once it listens.
        let line = output.fileHandleForReading.availableData
        address = String(decoding: line, as: UTF8.self).split(separator: "\n").first.map(String.init)
            ?? "unix:path=\(socket)"
    }

    /// Stops the daemon and removes its directory.
    func stop() {
        // SIGKILL: the daemon inherits the test process's signal mask, in which libdispatch blocks SIGTERM.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
