import ArgumentParser
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `blemu-live`: the commands that sit beside a running device and serve a client of their own, `ui` (a browser)
/// and `mcp` (an agent). `blemu` hands `ui` and `mcp` here; so does blemu-cli.
struct BlemuLive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blemu", abstract: "Watch and steer a running device: a live web view, and MCP tools for agents.",
        subcommands: [UICommand.self, McpCommand.self])
}

// A reader that goes away (an MCP client that closed its end, `blemu ui | head -1`) makes a write fail with EPIPE,
// which the write's caller handles; by default the signal would kill the process first, mid-answer.
signal(SIGPIPE, SIG_IGN)
Task {
    // ArgumentParser's main exits itself only after a failure.
    await BlemuLive.main()
    exit(0)
}
dispatchMain()
