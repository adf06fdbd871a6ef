import ArgumentParser
import Emulation
import Foundation
import Serving

/// `blemu ctl PATH COMMAND...`: talks to a running emulator's control socket.
struct CtlCommand: ParsableCommand {
    /// Two lines per command, each within ArgumentParser's 80 columns: its synopsis, then what it does.
    static let commandTable = ControlCommand.allCases.map { "  \($0.synopsis)\n      \($0.summary)" }
        .joined(separator: "\n")

    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Send a command to a running emulator's control socket and print the JSON response.",
        discussion: """
            Commands (the control protocol's own table, docs/control-and-events.md):
            \(commandTable)
            `set` stores a value now; a running schedule of that characteristic writes its generated fields \
            again at its next tick, so to hold a value, `schedules pause ID` first.
            Exits 0 on an ok response, 65 on an error response, 69 when the socket is unreachable.

            Example:
              blemu ctl /tmp/blemu.sock set battery-level --field percent=50
            """)

    @Argument(help: "The control socket's path.")
    var socket: String

    @Argument(help: "The command and its arguments.")
    var words: [String]

    @Option(name: .customLong("field"), help: "NAME=VALUE for `set` (repeatable; a list as a,b for flags).")
    var fields: [String] = []

    @Option(help: "For `fault`: reject the nth request from now.")
    var nth = 1

    @Option(help: "For `fault`: the ATT error (a name such as unlikely-error, or 0xNN).")
    var error: String?

    @Option(name: .customLong("delay-ms"), help: "For `fault`: delay the answer instead, in milliseconds.")
    var delayMs: Int?

    @Option(help: "For `fault`: disconnect or stop-advertising after answering, instead of an error.")
    var effect: String?

    @Option(help: "For `notify`: how many times to send the value (1 to 100000), queued in order.")
    var count: Int?

    @Option(help: "For `notify`: send only to this subscribed central (its id from `centrals`).")
    var central: String?

    @Flag(help: "For `events`: print each event as it happens, one JSON line, until interrupted.")
    var follow = false

    func run() throws {
        let request = try makeRequest()
        if follow { return try stream(request) }
        let response: String
        do { response = try ControlClient(path: socket).send(request) } catch {
            Console.error("blemu: \(error)")
            throw ExitCode.unavailable
        }
        print(response)
        // 65 is EX_DATAERR, the code a bad profile gets too: the emulator refused the data it was sent.
        if !ControlClient.isOK(response) { throw ExitCode.badProfile }
    }

    /// `events --follow`: the response line, then every event line as it comes, each written at once so a pipe
    /// (`| jq`, a test reading the output) sees it when it happens.
    private func stream(_ request: [String: JSONValue]) throws {
        // The first line is the response; only a refusal there ends the stream early.
        var isOK: Bool?
        do {
            try ControlClient(path: socket).stream(request) { line in
                // Unbuffered, so a pipe sees each line when it happens.
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
                if isOK == nil { isOK = ControlClient.isOK(line) }
                return isOK == true
            }
        } catch {
            Console.error("blemu: \(error)")
            throw ExitCode.unavailable
        }
        if isOK != true { throw ExitCode.badProfile }
    }

    private func makeRequest() throws -> [String: JSONValue] {
        let names = ControlCommand.allCases.map(\.rawValue).joined(separator: ", ")
        guard let name = words.first else { throw ValidationError("Give a command: \(names).") }
        guard let command = ControlCommand(rawValue: name) else {
            throw ValidationError("Unknown command `\(name)` (commands: \(names)).")
        }
        let arguments = Array(words.dropFirst())
        if follow && command != .events { throw ValidationError("--follow is for `events` only.") }
        func argument(_ index: Int, _ name: String) throws -> String {
            guard arguments.indices.contains(index) else {
                throw ValidationError("`\(command.rawValue)` needs \(name).")
            }
            return arguments[index]
        }
        switch command {
        case .get:
            return ["command": .string(name), "id": .string(try argument(0, "an ID"))]
        case .notify:
            var request: [String: JSONValue] = ["command": .string(name), "id": .string(try argument(0, "an ID"))]
            if let count { request["count"] = .integer(Int64(count)) }
            if let central { request["central"] = .string(central) }
            return request
        case .set:
            let id = try argument(0, "an ID")
            if arguments.count > 1 { return ["command": "set", "id": .string(id), "hex": .string(arguments[1])] }
            guard !fields.isEmpty else { throw ValidationError("`set` needs HEX or --field NAME=VALUE.") }
            var values: [String: JSONValue] = [:]
            for field in fields {
                guard let equals = field.firstIndex(of: "=") else { throw ValidationError("--field wants NAME=VALUE") }
                values[String(field[..<equals])] = Self.value(String(field[field.index(after: equals)...]))
            }
            return ["command": "set", "id": .string(id), "fields": .object(values)]
        case .centrals, .counters, .pairing, .reset:
            return ["command": .string(name)]
        case .events:
            return follow ? ["command": .string(name), "follow": .bool(true)] : ["command": .string(name)]
        case .advertising:
            return ["command": .string(name), "action": .string(try argument(0, "start or stop"))]
        case .schedules:
            var request: [String: JSONValue] = ["command": .string(name)]
            if let action = arguments.first { request["action"] = .string(action) }
            if arguments.count > 1 { request["id"] = .string(arguments[1]) }
            return request
        case .fault:
            var request: [String: JSONValue] = [
                "command": "fault", "operation": .string(try argument(0, "read or write")), "nth": .integer(Int64(nth)),
            ]
            if arguments.count > 1 { request["id"] = .string(arguments[1]) }
            if let effect {
                request["effect"] = .string(effect)
            } else if let delayMs {
                request["delayMs"] = .integer(Int64(delayMs))
            } else if let error {
                request["error"] = .string(error)
            }
            return request
        }
    }

    /// A field's text as JSON: a number, true/false, a list (flags) when it has commas, else text.
    private static func value(_ text: String) -> JSONValue {
        if let integer = Int64(text) { return .integer(integer) }
        if let number = Double(text) { return .number(number) }
        if text == "true" || text == "false" { return .bool(text == "true") }
        if text.contains(",") { return .array(text.split(separator: ",").map { .string(String($0)) }) }
        return .string(text)
    }
}
