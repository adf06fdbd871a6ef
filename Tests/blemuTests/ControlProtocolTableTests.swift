import ControlProtocol
import Emulation
import Foundation
import Testing

/// The control protocol is defined once (`ControlCommand`); the CLI's help, the Python client and the protocol's
/// document must name exactly its commands, so none is spelled somewhere the others do not know.
@Suite struct ControlProtocolTableTests {
    static let names = Set(ControlCommand.allCases.map(\.rawValue))

    /// Every `"command": "x"` (any spacing) in `text`.
    static func commands(in text: String) throws -> Set<String> {
        let expression = try NSRegularExpression(pattern: #""command"\s*:\s*"([a-z-]+)""#)
        let matches = expression.matches(in: text, range: NSRange(text.startIndex..., in: text))
        return Set(matches.compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } })
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: BlemuProcess.repositoryRoot.path + "/" + path, encoding: .utf8)
    }

    @Test func thePythonClientSendsExactlyTheProtocolsCommands() async throws {
        let sent = try Self.commands(in: try Self.read("python/src/blemu/control.py"))
        #expect(sent == Self.names, "missing \(Self.names.subtracting(sent)), unknown \(sent.subtracting(Self.names))")
    }

    @Test func theProtocolsDocumentDescribesEveryCommand() async throws {
        let described = try Self.commands(in: try Self.read("docs/control-and-events.md"))
        #expect(described == Self.names, "\(described.symmetricDifference(Self.names))")
    }

    @Test func ctlHelpListsEveryCommandFromTheTable() async throws {
        let help = try await BlemuProcess.run("ctl", "--help")
        #expect(help.status == 0)
        for command in ControlCommand.allCases {
            #expect(help.stdout.contains("\n  \(command.rawValue)"), "\(command.rawValue) is not in ctl --help")
            #expect(help.stdout.contains(command.summary), "\(command.summary) is not in ctl --help")
        }
    }

    /// Each command is a subcommand of its own: `--help` after it shows its usage, without touching the socket.
    @Test(arguments: ControlCommand.allCases)
    func eachCommandHasItsOwnHelp(_ command: ControlCommand) async throws {
        let help = try await BlemuProcess.run("ctl", "/nonexistent/blemu.sock", command.rawValue, "--help")
        #expect(help.status == 0, "\(help.stderr)")
        #expect(help.stdout.contains("USAGE: blemu ctl SOCKET \(command.rawValue)"), "\(help.stdout)")
    }

    /// A command's arguments are checked by its parser before the socket is tried: a usage error (64) that says what
    /// is wrong, never 69 for the missing socket.
    @Test(arguments: [
        (["advertising", "sideways"], "'start' and 'stop'"),
        (["frob"], "unknown command `frob`"),
        (["set", "battery-level"], "Give HEX or --field NAME=VALUE"),
        (["fault", "read", "--error", "0x0e", "--delay-ms", "5"], "Give one of --error"),
        (["counters", "--follow"], "Unknown option '--follow'"),
        ([], "give a command"),
    ])
    func aWrongCommandLineIsAUsageError(_ words: [String], _ message: String) async throws {
        let result = try await BlemuProcess.run(["ctl", "/nonexistent/blemu.sock"] + words)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// The check above can fail: a command the table lacks is found in text.
    @Test func aCommandTheTableLacksIsFound() async throws {
        let found = try Self.commands(in: #"request({"command": "reboot"}) and {"command":"get","id":"x"}"#)
        #expect(found.subtracting(Self.names) == ["reboot"])
    }
}
