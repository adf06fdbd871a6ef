import AgentTools
import ArgumentParser
import Logging
import Serving

#if canImport(Glibc)
import Glibc
#endif

/// `blemu mcp --control SOCK [--events FILE]`: the control socket's commands as Model Context Protocol tools, over
/// standard input and output, for an agent driving a running emulated device.
struct McpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract: "Serve a running emulator's control socket as Model Context Protocol tools, over stdio.",
        discussion: """
            An MCP client (an agent) starts this command and speaks JSON-RPC on its standard input and output. The \
            tools are the control protocol's commands (describe, get, set, notify, fault, schedules, centrals, \
            counters, pairing, reset, advertising, disconnect), with recent_events and wait_for_event for the \
            events; the resources are blemu://profile and blemu://events (docs/mcp.md).

            The socket need not be there yet: when it cannot be reached, that is said once on stderr and each tool \
            call answers an error naming the reason, until `blemu run PROFILE --control SOCK` serves it. Exits 0 \
            when standard input closes; 64 on a usage error.

            Example (an MCP client's configuration runs the second line; docs/mcp.md shows one):
              blemu run profiles/heart-rate.yaml --control /tmp/hr.sock &
              blemu mcp --control /tmp/hr.sock
            """)

    @Option(help: ArgumentHelp("The control socket of `blemu run ... --control SOCK`.", valueName: "SOCK"))
    var control: String

    @Option(
        help: ArgumentHelp(
            "The event log of `blemu run ... --events FILE`: blemu://events shows its end (default: the socket's).",
            valueName: "FILE"))
    var events: String?

    func run() async throws {
        // A client that closed its end makes a write fail with EPIPE, which the channel handles; by default the
        // signal would kill the process first, mid-answer.
        signal(SIGPIPE, SIG_IGN)
        // Standard output carries the protocol alone: everything for a person goes to stderr.
        let logger = Logger(label: "blemu.mcp", factory: { StreamLogHandler.standardError(label: $0) })
        let server = AgentToolServer(
            control: control, events: events, version: BuildRevision.versionLine(), logger: logger)
        // Beside serving, not before it: a socket that accepts and never answers must not hold up the handshake.
        let check = Task {
            if let reason = await server.unreachable() {
                Console.error("blemu mcp: \(reason)")
                Console.error("blemu mcp: serving anyway; each tool call answers that error until the socket is served")
            }
        }
        await server.serve(input: STDIN_FILENO, output: STDOUT_FILENO) { reason in
            Console.error(
                "blemu mcp: cannot write to standard output (\(reason)); answers that cannot be written are dropped")
        }
        check.cancel()
    }
}
