import ArgumentParser
import ControlProtocol
import Emulation
import FoundationEssentials
import Serving

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu ctl PATH COMMAND...`: talks to a running emulator's control socket.
struct CtlCommand: ParsableCommand {
    /// Each command's usage as its subcommand parses it (wrapped within ArgumentParser's 80 columns), then what it
    /// does.
    static let commandTable = ControlCommand.allCases.map { command in
        let usage = ControlVerbs.usageString(for: ControlVerbs.verb(for: command))
        let words = usage.dropFirst(ControlVerbs.configuration.commandName?.count ?? 0).split(separator: " ")
        var lines: [String] = []
        var line = " "
        for word in words {
            if line.count + 1 + word.count > 78 {
                lines.append(line)
                line = "   "
            }
            line += " " + word
        }
        return (lines + [line, "      \(command.summary)"]).joined(separator: "\n")
    }.joined(separator: "\n")

    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Send a command to a running emulator's control socket and print the JSON response.",
        discussion: """
            Commands (the control protocol's own table, docs/control-and-events.md):
            \(commandTable)
            `blemu ctl SOCKET COMMAND --help` shows one command's arguments and options.
            Exits 0 on an ok response, 65 on an error response, 69 when the socket is unreachable.

            Example:
              blemu ctl /tmp/blemu.sock set battery-level --field percent=50
            """)

    @Argument(help: "The control socket's path.")
    var socket: String

    @Argument(
        parsing: .captureForPassthrough,
        help: "The command and its arguments (`blemu ctl SOCKET COMMAND --help` shows one command's).")
    var words: [String] = []

    func run() throws {
        let verb = try Self.verb(from: words)
        let request = verb.request()
        if verb is ControlVerbs.Handle { return try bridge(request) }
        if verb.follows { return try stream(request) }
        let response: String
        do { response = try ControlClient(path: socket).send(request) } catch {
            Console.error("blemu: \(error)")
            throw ExitCode.unavailable
        }
        print(response)
        // 65 is EX_DATAERR, the code a bad profile gets too: the emulator refused the data it was sent.
        if !ControlClient.isOK(response) { throw ExitCode.badProfile }
    }

    /// The command `words` spell, parsed by its own subcommand; a mistake is a usage error (64) with ArgumentParser's
    /// message, and `--help` prints that command's help and exits 0, all before the socket is touched.
    static func verb(from words: [String]) throws -> any ControlVerb {
        let names = ControlCommand.allCases.map(\.rawValue).joined(separator: ", ")
        if let name = words.first, !name.hasPrefix("-"), ControlCommand(rawValue: name) == nil {
            Console.error("Error: unknown command `\(name)` (commands: \(names)).")
            throw ExitCode.usage
        }
        if words.first == "-h" || words.first == "--help" {
            print(helpMessage())
            throw ExitCode.success
        }
        do {
            var parsed = try ControlVerbs.parseAsRoot(words)
            if let verb = parsed as? any ControlVerb { return verb }
            // `--help` parses as ArgumentParser's own help command, whose `run` throws the help it prints.
            if !(parsed is ControlVerbs) { try parsed.run() }
        } catch {
            let code = ControlVerbs.exitCode(for: error)
            let message = ControlVerbs.fullMessage(for: error)
            if code == .success {
                print(message)
            } else {
                Console.error(message)
            }
            throw code
        }
        Console.error("Error: give a command: \(names).")
        throw ExitCode.usage
    }

    /// `handle`: the claim's response and each request line to standard output as it comes, each line of standard
    /// input to the socket as an answer, until either ends. A refused claim exits 65, as any refused command.
    private func bridge(_ request: [String: JSONValue]) throws {
        var isOK: Bool?
        do {
            _ = try ControlClient(path: socket).bridge(request, input: STDIN_FILENO) {
                line in
                Console.line(line, to: STDOUT_FILENO)
                if isOK == nil { isOK = ControlClient.isOK(line) }
            }
        } catch {
            Console.error("blemu: \(error)")
            throw ExitCode.unavailable
        }
        if isOK != true { throw ExitCode.badProfile }
    }

    /// `events --follow`: the response line, then every event line as it comes, each written at once so a pipe
    /// (`| jq`, a test reading the output) sees it when it happens.
    private func stream(_ request: [String: JSONValue]) throws {
        // The first line is the response; only a refusal there ends the stream early.
        var isOK: Bool?
        do {
            try ControlClient(path: socket).stream(request) { line in
                // Unbuffered, so a pipe sees each line when it happens.
                Console.line(line, to: STDOUT_FILENO)
                if isOK == nil { isOK = ControlClient.isOK(line) }
                return isOK == true
            }
        } catch {
            Console.error("blemu: \(error)")
            throw ExitCode.unavailable
        }
        if isOK != true { throw ExitCode.badProfile }
    }
}
