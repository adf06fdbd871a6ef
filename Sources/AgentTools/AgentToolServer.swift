import ControlProtocol
import LocalIO
import Logging

/// `blemu mcp`: a Model Context Protocol server whose tools are the control protocol's commands, so an agent steers
/// a running `blemu run ... --control SOCK` the way a test does, with nothing but that socket (and, for the events
/// resource, the event log). A socket that cannot be reached is each call's error, never the server's end.
public struct AgentToolServer: Sendable {
    /// The server's name in the MCP handshake.
    public static let name = "blemu"
    /// The profile resource: `describe`'s `profile`, as JSON.
    public static let profileURI = "blemu://profile"
    /// The events resource: the latest events, one JSON object a line.
    public static let eventsURI = "blemu://events"
    /// How long a command may go unanswered before its call fails.
    public static let commandTimeout = Duration.seconds(60)

    /// What the agent is told at the handshake, before it picks a tool.
    static let instructions = """
        These tools steer one Bluetooth LE peripheral that blemu emulates on a BlueZ machine, through its control \
        socket. Call `describe` first: it lists the services and characteristics, whose `id` the other tools take, \
        and the fields each value decodes into. Events (requests from centrals, notifications, subscriptions, \
        links) are in `recent_events`; `wait_for_event` waits for the next one.
        """

    private let link: ControlLink
    private let eventsFile: String?
    private let version: String
    private let logger: Logger

    /// A server for the control socket at `control`; `events` is the event log whose end `blemu://events` shows
    /// (nil: the socket's latest events); `version` is blemu's, for the handshake; a command unanswered for
    /// `commandTimeout` fails.
    public init(
        control: String, events: String? = nil, version: String, logger: Logger,
        commandTimeout: Duration = AgentToolServer.commandTimeout
    ) {
        link = ControlLink(client: ControlClient(path: control), commandTimeout: commandTimeout)
        eventsFile = events
        self.version = version
        self.logger = logger
    }

    /// The protocol versions this server speaks, newest first (MCP's "Lifecycle": a client asking for another is
    /// answered with the newest, and decides whether to go on).
    public static let protocolVersions = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]

    /// The resources offered, as `resources/list` lists them: the profile and the latest events.
    public var resources: [JSONValue] {
        [
            [
                "name": "profile", "uri": .string(Self.profileURI), "mimeType": "application/json",
                "description":
                    "The profile served, as `describe` answers it: services, characteristics, fields, behaviour.",
            ],
            [
                "name": "events", "uri": .string(Self.eventsURI), "mimeType": "application/jsonl",
                "description": .string(
                    eventsFile.map { "The last \(AgentTool.recentEventsKept) lines of the event log \($0)." }
                        ?? "The latest \(AgentTool.recentEventsKept) events the device recorded, oldest first."),
            ],
        ]
    }

    /// Serves MCP on `input` and `output` (standard input and output for `blemu mcp`) until `input` ends. Each
    /// request is answered by a task of its own, so a call that waits (`wait_for_event`, up to 300 s) holds up
    /// nothing else; when `input` ends the calls still in flight go unanswered (MCP's stdio shutdown: the client
    /// has gone), so those tasks are not awaited. `outputClosed` is told once, with the reason, when writing `output`
    /// first fails (EPIPE: the client stopped reading); an answer that cannot be written is dropped.
    public func serve(input: Int32, output: Int32, outputClosed: @escaping @Sendable (String) -> Void = { _ in }) async
    {
        let channel = StdioChannel(input: input, output: output, outputClosed: outputClosed)
        let calls = CallTable()
        for await framed in channel.lines() {
            guard case .line(let line) = framed else {
                let reason = "a line is at most \(StdioChannel.longestLine) bytes"
                channel.send(RPCMessage.error(.parseError(reason), for: .null))
                continue
            }
            guard line.contains(where: { !$0.isWhitespace }) else { continue }
            switch RPCMessage(line: line) {
            case .request(let id, let method, let params):
                calls.begin(id)
                Task {
                    let answer: String
                    do throws(RPCError) {
                        let result = try await self.answer(method, params) { token in
                            // The one progress step of a wait: it listens now (not for a call cancelled meanwhile,
                            // whose token is no longer the client's: MCP's "Progress").
                            guard calls.isWanted(id) else { return }
                            channel.send(
                                RPCMessage.notification(
                                    "notifications/progress",
                                    ["progressToken": token, "progress": 0, "message": "listening"]))
                        }
                        answer = RPCMessage.result(result, for: id)
                    } catch {
                        logger.debug("\(method): \(error.message)")
                        answer = RPCMessage.error(error, for: id)
                    }
                    if calls.end(id) { channel.send(answer) }
                }
            case .notification("notifications/cancelled", let params):
                if let id = params["requestId"] { calls.cancel(id) }
            case .notification, .ignored:
                // `initialized` and progress need nothing from a server that keeps no state between calls; no
                // request of ours awaits a response.
                break
            case .invalid(let id, let error):
                channel.send(RPCMessage.error(error, for: id))
            }
        }
    }

    /// The result of the request `method` with `params`, or the error it is answered with; `progress` sends a
    /// progress notification for the token given.
    func answer(
        _ method: String, _ params: [String: JSONValue], progress: @escaping @Sendable (JSONValue) -> Void
    ) async throws(RPCError) -> JSONValue {
        switch method {
        case "initialize":
            let asked = params["protocolVersion"]?.string ?? ""
            let version = Self.protocolVersions.contains(asked) ? asked : Self.protocolVersions[0]
            return [
                "protocolVersion": .string(version),
                "capabilities": [
                    "tools": ["listChanged": false], "resources": ["subscribe": false, "listChanged": false],
                ],
                "serverInfo": ["name": .string(Self.name), "title": "blemu", "version": .string(self.version)],
                "instructions": .string(Self.instructions),
            ]
        case "ping":
            return [:]
        case "tools/list":
            return ["tools": .array(AgentTool.allCases.map(\.definition))]
        case "tools/call":
            guard let name = params["name"]?.string else { throw .invalidParams("`name` must be a tool's name") }
            guard let tool = AgentTool(rawValue: name) else {
                let names = AgentTool.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidParams("unknown tool `\(name)` (tools: \(names))")
            }
            let arguments: [String: JSONValue]?
            switch params["arguments"] {
            case nil, .null?: arguments = nil
            case .object(let members)?: arguments = members
            default: throw .invalidParams("`arguments` must be an object")
            }
            // A progress token is a string or a number (MCP's "Progress"); anything else asks for none.
            let token = params["_meta"]?["progressToken"].flatMap { $0.string != nil || $0.integer != nil ? $0 : nil }
            return await call(tool, arguments) { if let token { progress(token) } }.json
        case "resources/list":
            return ["resources": .array(resources)]
        case "resources/read":
            guard let uri = params["uri"]?.string else { throw .invalidParams("`uri` must be a resource's URI") }
            do throws(ToolError) {
                return ["contents": [try await read(uri).json]]
            } catch {
                // An unknown resource is the request's mistake; a socket or file that fails is the server's.
                let isKnown = [Self.profileURI, Self.eventsURI].contains(uri)
                throw isKnown ? .internalError(error.description) : .invalidParams(error.description)
            }
        default:
            throw .methodNotFound(method)
        }
    }

    /// The result of calling `tool` with `arguments`: the socket's response (without `ok`) as JSON text and as
    /// structured content, or an error result naming the command and the reason. `listening` runs when a wait is
    /// listening.
    public func call(
        _ tool: AgentTool, _ arguments: [String: JSONValue]?,
        listening: @escaping @Sendable () async -> Void = {}
    ) async -> ToolResult {
        do throws(ToolError) {
            let answer: JSONValue
            switch try tool.call(arguments) {
            case .command(let request):
                answer = .object(try await link.send(request, for: tool.rawValue))
            case .recentEvents(let filter, let limit):
                let response = try await link.send(
                    ToolCall.recentEvents(filter, limit: limit).request, for: tool.rawValue)
                let events = (response["events"]?.array ?? []).filter(filter.matches).suffix(limit)
                answer = ["events": .array(Array(events))]
            case .waitForEvent(let filter, let timeout):
                answer = try await link.firstEvent(
                    matching: filter, within: timeout, for: tool.rawValue, listening: listening)
            }
            logger.debug("\(tool.rawValue): ok")
            return ToolResult(text: answer.text, structured: answer, isError: false)
        } catch {
            logger.debug("\(error)")
            return ToolResult(text: error.description, structured: nil, isError: true)
        }
    }

    /// The contents of the resource at `uri`; throws `ToolError` naming the command that failed, or an unknown
    /// resource.
    public func read(_ uri: String) async throws(ToolError) -> ResourceText {
        switch uri {
        case Self.profileURI:
            let response = try await link.send(["command": .string(ControlCommand.describe.rawValue)], for: "describe")
            return ResourceText(uri: uri, mimeType: "application/json", text: (response["profile"] ?? .null).text)
        case Self.eventsURI:
            let lines: [String]
            if let eventsFile {
                // The log's end, from a bounded window (a soak's log is gigabytes), off the cooperative pool.
                let read = await OffPool.run {
                    Result { () throws(LocalFile.ReadError) in
                        try LocalFile.lastLines(atPath: eventsFile, count: AgentTool.recentEventsKept)
                    }
                }
                do { lines = try read.get() } catch {
                    throw ToolError("events", "cannot read the event log \(error.description)")
                }
            } else {
                let response = try await link.send(["command": .string(ControlCommand.events.rawValue)], for: "events")
                lines = (response["events"]?.array ?? []).map(\.text)
            }
            return ResourceText(uri: uri, mimeType: "application/jsonl", text: lines.map { $0 + "\n" }.joined())
        default:
            let known = [Self.profileURI, Self.eventsURI].joined(separator: ", ")
            throw ToolError("resources/read", "unknown resource `\(uri)` (resources: \(known))")
        }
    }

    /// Why the control socket cannot be reached now (nil when it answers within `patience`): said once at start,
    /// for the person reading the client's log; the server serves either way.
    public func unreachable(within patience: Duration = .seconds(5)) async -> String? {
        let probe = ControlLink(client: link.client, commandTimeout: patience)
        do throws(ToolError) {
            _ = try await probe.send(["command": .string(ControlCommand.counters.rawValue)], for: "counters")
            return nil
        } catch {
            return error.reason
        }
    }
}
