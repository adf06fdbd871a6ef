import ArgumentParser
import Serving

/// `blemu ui` and `blemu mcp`, as `blemu --help` lists them: served by blemu-live (`Handover.live`), to which
/// `blemu` hands them directly; run as blemu-cli's own, they hand the same words over.
enum LiveCommands {
    /// `blemu ui`: a live page of a running device.
    struct UI: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ui",
            abstract: "Watch and steer a running device from a browser: a live page on its control socket.",
            discussion: "`blemu ui --help` lists its options (docs/live-view.md).")

        @Argument(parsing: .allUnrecognized, help: "`blemu ui`'s options.")
        var words: [String] = []

        func run() throws { try LiveCommands.handOver("ui", words) }
    }

    /// `blemu mcp`: the control socket's commands as MCP tools.
    struct MCP: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mcp",
            abstract: "Serve a running device's control socket as Model Context Protocol tools, over stdio.",
            discussion: "`blemu mcp --help` lists its options (docs/mcp.md).")

        @Argument(parsing: .allUnrecognized, help: "`blemu mcp`'s options.")
        var words: [String] = []

        func run() throws { try LiveCommands.handOver("mcp", words) }
    }

    /// Replaces this process with blemu-live running `command` with `words`; throws 70 when it cannot.
    static func handOver(_ command: String, _ words: [String]) throws {
        guard let live = Handover.locate(Handover.live) else {
            Console.error("blemu: blemu-live is not installed beside blemu-cli; reinstall blemu")
            throw ExitCode(ExitStatus.software.code)
        }
        let reason = Handover.exec(live, [command] + words)
        Console.error("blemu: cannot run \(live): \(reason)")
        throw ExitCode(ExitStatus.software.code)
    }
}
