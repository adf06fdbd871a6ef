import AgentTools
import ControlProtocol
import Emulation
import Foundation
import GATTProfile
import Logging
import Peripheral
import PeripheralTesting

/// The heart-rate profile emulated on the in-memory backend, its control socket served as `blemu run --control`
/// serves it, and a tool server of that socket: the tools meet the real protocol, its own answers and errors.
struct ControlledDevice {
    /// The emulator, to act beside the tools.
    let emulator: Emulator
    /// The control socket's server.
    let control: ControlServer
    /// The tools' server on the socket.
    let tools: AgentToolServer
    /// A fresh directory holding the socket.
    let directory: String

    /// Quiet: the tests read results, not logs.
    static let logger = Logger(label: "blemu.mcp.test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Loads and starts the device; `stop()` ends it.
    static func start(events: String? = nil) async throws -> ControlledDevice {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let loaded = ProfileLoader.load(path: root.appendingPathComponent("profiles/heart-rate.yaml").path)
        guard let profile = loaded.profile, !loaded.hasErrors else { throw ProfileFailure(loaded.renderedDiagnostics) }
        let emulator = try Emulator(profile: profile, eventLog: EventLog(), logger: logger)
        let (manager, _) = try await PeripheralManager.inMemory(
            publishing: profile.services, handler: emulator.handler, logger: logger)
        await emulator.start(on: manager)
        let directory = try temporaryDirectory()
        let control = ControlServer(path: directory + "/control.sock", emulator: emulator, logger: logger)
        try control.start()
        let tools = AgentToolServer(control: control.path, events: events, version: "test", logger: logger)
        return ControlledDevice(emulator: emulator, control: control, tools: tools, directory: directory)
    }

    /// Stops serving and removes the directory.
    func stop() async {
        control.stop()
        await emulator.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Calls `tool` as a client would.
    func call(_ tool: AgentTool, _ arguments: [String: JSONValue] = [:]) async -> ToolResult {
        await tools.call(tool, arguments)
    }
}

/// Why the profile did not load.
struct ProfileFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh directory under /tmp, short enough for a Unix socket path; the caller removes it.
func temporaryDirectory() throws -> String {
    let path = "/tmp/blemu-mcp-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
