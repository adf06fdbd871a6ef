import ArgumentParser
import ControlProtocol
import Emulation

/// One `blemu ctl SOCKET` command: its name and abstract are the control protocol's (`ControlCommand`), its arguments
/// are parsed by ArgumentParser, and the result is the protocol's request object.
protocol ControlVerb: ParsableCommand {
    /// The protocol command this verb sends.
    static var command: ControlCommand { get }
    /// The request line's object.
    func request() -> [String: JSONValue]
    /// True when the response is followed by a stream of event lines (`events --follow`).
    var follows: Bool { get }
    /// What `--help` says beyond the abstract (empty: nothing).
    static var discussion: String { get }
}

extension ControlVerb {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: command.rawValue, abstract: command.summary, discussion: discussion)
    }

    static var discussion: String { "" }

    var follows: Bool { false }

    /// The request with `command` set and `members` beside it.
    func request(_ members: [String: JSONValue] = [:]) -> [String: JSONValue] {
        members.merging(["command": .string(Self.command.rawValue)]) { _, command in command }
    }
}

/// The commands after `blemu ctl SOCKET`, one subcommand per case of the control protocol's table, so a command the
/// table gains does not compile until it is parsed here.
struct ControlVerbs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blemu ctl SOCKET", subcommands: ControlCommand.allCases.map { verb(for: $0) })

    /// The subcommand that sends `command`.
    static func verb(for command: ControlCommand) -> any ControlVerb.Type {
        switch command {
        case .get: Get.self
        case .set: SetValue.self
        case .notify: Notify.self
        case .centrals: Centrals.self
        case .disconnect: Disconnect.self
        case .fault: Fault.self
        case .advertising: Advertising.self
        case .schedules: Schedules.self
        case .pairing: Pairing.self
        case .counters: Counters.self
        case .reset: Reset.self
        case .describe: Describe.self
        case .status: Status.self
        case .state: State.self
        case .events: Events.self
        case .handle: Handle.self
        }
    }

    /// `get ID`.
    struct Get: ControlVerb {
        static let command = ControlCommand.get

        @Argument(help: ArgumentHelp("The characteristic's id.", valueName: "ID"))
        var id: String

        func request() -> [String: JSONValue] { request(["id": .string(id)]) }
    }

    /// `set ID HEX` or `set ID --field NAME=VALUE...`.
    struct SetValue: ControlVerb {
        static let command = ControlCommand.set
        static let discussion = """
            A running schedule of the characteristic writes its generated fields again at its next tick: to hold a \
            value, `schedules pause ID` first.
            """

        @Argument(help: ArgumentHelp("The characteristic's id.", valueName: "ID"))
        var id: String

        @Argument(help: ArgumentHelp("The whole value, as hex.", valueName: "HEX"))
        var hex: String?

        @Option(
            name: .customLong("field"),
            help: ArgumentHelp("Change one field (repeatable; a list as a,b for flags).", valueName: "NAME=VALUE"))
        var fields: [String] = []

        func validate() throws {
            if (hex == nil) == fields.isEmpty { throw ValidationError("Give HEX or --field NAME=VALUE, not both.") }
            if let field = fields.first(where: { !$0.contains("=") }) {
                throw ValidationError("--field wants NAME=VALUE, not `\(field)`.")
            }
        }

        func request() -> [String: JSONValue] {
            if let hex { return request(["id": .string(id), "hex": .string(hex)]) }
            var values: [String: JSONValue] = [:]
            for field in fields {
                guard let equals = field.firstIndex(of: "=") else { continue }  // `validate` refused it already
                values[String(field[..<equals])] = Self.value(String(field[field.index(after: equals)...]))
            }
            return request(["id": .string(id), "fields": .object(values)])
        }

        /// A field's text as JSON: a number, true/false, a list (flags) when it has commas, else text.
        static func value(_ text: String) -> JSONValue {
            if let integer = Int64(text) { return .integer(integer) }
            if let number = Double(text) { return .number(number) }
            if text == "true" || text == "false" { return .bool(text == "true") }
            if text.contains(",") { return .array(text.split(separator: ",").map { .string(String($0)) }) }
            return .string(text)
        }
    }

    /// `notify ID [--count N] [--central C]`.
    struct Notify: ControlVerb {
        static let command = ControlCommand.notify

        @Argument(help: ArgumentHelp("The characteristic's id.", valueName: "ID"))
        var id: String

        @Option(help: ArgumentHelp("How many times to send the value (1 to 100000), queued in order.", valueName: "N"))
        var count: Int?

        @Option(help: ArgumentHelp("Send only to this subscribed central (its id from `centrals`).", valueName: "C"))
        var central: String?

        func request() -> [String: JSONValue] {
            var members: [String: JSONValue] = ["id": .string(id)]
            if let count { members["count"] = .integer(Int64(count)) }
            if let central { members["central"] = .string(central) }
            return request(members)
        }
    }

    /// `centrals`.
    struct Centrals: ControlVerb {
        static let command = ControlCommand.centrals
        func request() -> [String: JSONValue] { request([:]) }
    }

    /// `disconnect [--central C]`.
    struct Disconnect: ControlVerb {
        static let command = ControlCommand.disconnect

        @Option(help: ArgumentHelp("Drop only this connected central's link (its id from `centrals`).", valueName: "C"))
        var central: String?

        func request() -> [String: JSONValue] { request(central.map { ["central": .string($0)] } ?? [:]) }
    }

    /// `fault read|write [ID] --nth N (--error E | --delay-ms MS | --effect X)`.
    struct Fault: ControlVerb {
        static let command = ControlCommand.fault

        /// The request a fault arms on.
        enum Operation: String, ExpressibleByArgument, CaseIterable {
            case read, write
        }

        @Argument(help: ArgumentHelp("The kind of request to fail.", valueName: "read|write"))
        var operation: Operation

        @Argument(help: ArgumentHelp("Only requests for this characteristic (any, if omitted).", valueName: "ID"))
        var id: String?

        @Option(help: ArgumentHelp("Fail the nth such request from now.", valueName: "N"))
        var nth = 1

        @Option(help: ArgumentHelp("The ATT error to answer with (unlikely-error, ..., or 0xNN).", valueName: "E"))
        var error: String?

        @Option(name: .customLong("delay-ms"), help: ArgumentHelp("Delay the answer instead.", valueName: "MS"))
        var delayMs: Int?

        @Option(help: ArgumentHelp("After answering, disconnect or stop-advertising instead.", valueName: "X"))
        var effect: String?

        func validate() throws {
            if [error != nil, delayMs != nil, effect != nil].filter({ $0 }).count > 1 {
                throw ValidationError("Give one of --error, --delay-ms and --effect.")
            }
        }

        func request() -> [String: JSONValue] {
            var members: [String: JSONValue] = ["operation": .string(operation.rawValue), "nth": .integer(Int64(nth))]
            if let id { members["id"] = .string(id) }
            if let effect { members["effect"] = .string(effect) }
            if let delayMs { members["delayMs"] = .integer(Int64(delayMs)) }
            if let error { members["error"] = .string(error) }
            return request(members)
        }
    }

    /// `advertising start|stop`.
    struct Advertising: ControlVerb {
        static let command = ControlCommand.advertising

        /// What to do with the advertisement.
        enum Action: String, ExpressibleByArgument, CaseIterable {
            case start, stop
        }

        @Argument(help: ArgumentHelp("Start or stop advertising.", valueName: "start|stop"))
        var action: Action

        func request() -> [String: JSONValue] { request(["action": .string(action.rawValue)]) }
    }

    /// `schedules [pause|resume] [ID]`.
    struct Schedules: ControlVerb {
        static let command = ControlCommand.schedules

        /// What to do with the schedules (nothing: list them).
        enum Action: String, ExpressibleByArgument, CaseIterable {
            case pause, resume
        }

        @Argument(help: ArgumentHelp("Pause or resume (omitted: list the schedules).", valueName: "pause|resume"))
        var action: Action?

        @Argument(
            help: ArgumentHelp(
                "The characteristic whose schedule to pause or resume (every one, if omitted).", valueName: "ID"))
        var id: String?

        func validate() throws {
            if action == nil && id != nil { throw ValidationError("Give pause or resume before the id.") }
        }

        func request() -> [String: JSONValue] {
            var members: [String: JSONValue] = [:]
            if let action { members["action"] = .string(action.rawValue) }
            if let id { members["id"] = .string(id) }
            return request(members)
        }
    }

    /// `pairing`.
    struct Pairing: ControlVerb {
        static let command = ControlCommand.pairing
        func request() -> [String: JSONValue] { request([:]) }
    }

    /// `counters`.
    struct Counters: ControlVerb {
        static let command = ControlCommand.counters
        func request() -> [String: JSONValue] { request([:]) }
    }

    /// `reset`.
    struct Reset: ControlVerb {
        static let command = ControlCommand.reset
        func request() -> [String: JSONValue] { request([:]) }
    }

    /// `describe`.
    struct Describe: ControlVerb {
        static let command = ControlCommand.describe
        func request() -> [String: JSONValue] { request([:]) }
    }

    /// `status`.
    struct Status: ControlVerb {
        static let command = ControlCommand.status
        static let discussion = """
            The advertisement's bytes are the ones bluetoothd and the kernel program for the profile, each AD             structure explained, as `blemu adv` lays them out.
            """
        func request() -> [String: JSONValue] { request([:]) }
    }

    /// `state [NAME=VALUE...]`.
    struct State: ControlVerb {
        static let command = ControlCommand.state
        static let discussion = """
            Each NAME=VALUE sets a variable as a protocol's `set` would (a value its type cannot hold is refused), \
            then the answer lists every variable. `reset` puts them back to their initial values.
            """

        @Argument(help: ArgumentHelp("Variables to set.", valueName: "NAME=VALUE"))
        var assignments: [String] = []

        func validate() throws {
            if let assignment = assignments.first(where: { !$0.contains("=") }) {
                throw ValidationError("state wants NAME=VALUE, not `\(assignment)`.")
            }
        }

        func request() -> [String: JSONValue] {
            guard !assignments.isEmpty else { return request([:]) }
            var values: [String: JSONValue] = [:]
            for assignment in assignments {
                guard let equals = assignment.firstIndex(of: "=") else { continue }  // `validate` refused it already
                values[String(assignment[..<equals])] = SetValue.value(
                    String(assignment[assignment.index(after: equals)...]))
            }
            return request(["set": .object(values)])
        }
    }

    /// `events [--follow]`.
    struct Events: ControlVerb {
        static let command = ControlCommand.events

        @Flag(help: "Print each event as it happens, one JSON line, until interrupted.")
        var follow = false

        var follows: Bool { follow }

        func request() -> [String: JSONValue] { request(follow ? ["follow": .bool(true)] : [:]) }
    }

    /// `handle ID... [--operations read,write] [--deadline-ms N] [--fallback E]`.
    struct Handle: ControlVerb {
        static let command = ControlCommand.handle
        static let discussion = """
            Prints the claim's response, then one request line per read or write of the named characteristics:
            {"request":N,"operation":"write","id":ID,"central":C,"mtu":M,"hex":"..."}. Each line read from standard
            input is sent back as an answer: {"answer":N} (success; a read gets the stored value), {"answer":N,
            "hex":"..."} (a read's value, or the value a write keeps), {"answer":N,"error":"0x80"}, or
            {"answer":N,"profile":true} (the profile answers). A request not answered within the deadline, or while
            this command is not running, gets the fallback. Ends when standard input ends or the device stops.
            Example, in bash: coproc blemu ctl /tmp/blemu.sock handle control-point
            """

        @Argument(help: "The characteristics whose requests to answer.")
        var ids: [String]

        @Option(help: "read, write, or read,write (the default).")
        var operations: String?

        @Option(help: "How long a request waits for its answer (at most, and by default, 0.8 x the request deadline).")
        var deadlineMs: Int?

        @Option(
            help: "What answers when no answer comes in time: profile (the default) or an ATT error (0x80, a name).")
        var fallback: String?

        func request() -> [String: JSONValue] {
            var members: [String: JSONValue] = ["ids": .array(ids.map(JSONValue.string))]
            if let operations {
                members["operations"] = .array(operations.split(separator: ",").map { .string(String($0)) })
            }
            if let deadlineMs { members["deadlineMs"] = .integer(Int64(deadlineMs)) }
            if let fallback { members["fallback"] = .string(fallback) }
            return request(members)
        }
    }
}
