import ControlProtocol
import LocalIO
import Logging
import MCP

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

    /// The resources offered: the profile and the latest events.
    public var resources: [Resource] {
        [
            Resource(
                name: "profile", uri: Self.profileURI,
                description:
                    "The profile served, as `describe` answers it: services, characteristics, fields, behaviour.",
                mimeType: "application/json"),
            Resource(
                name: "events", uri: Self.eventsURI,
                description: eventsFile.map { "The last \(AgentTool.recentEventsKept) lines of the event log \($0)." }
                    ?? "The latest \(AgentTool.recentEventsKept) events the device recorded, oldest first.",
                mimeType: "application/jsonl"),
        ]
    }

    /// Serves MCP on `transport` (standard input and output for `blemu mcp`) until the client closes it.
    public func serve(on transport: any Transport) async throws {
        let server = Server(
            name: Self.name, version: version, title: "blemu", instructions: Self.instructions,
            capabilities: .init(
                resources: .init(subscribe: false, listChanged: false), tools: .init(listChanged: false))
        )
        await server.withMethodHandler(ListTools.self) { _ in
            ListTools.Result(tools: AgentTool.allCases.map(\.definition))
        }
        await server.withMethodHandler(CallTool.self) { parameters in
            guard let tool = AgentTool(rawValue: parameters.name) else {
                let names = AgentTool.allCases.map(\.rawValue).joined(separator: ", ")
                throw MCPError.invalidParams("unknown tool `\(parameters.name)` (tools: \(names))")
            }
            let token = parameters._meta?.progressToken
            return await call(tool, parameters.arguments) {
                // The one progress step of a wait: it listens now.
                guard let token else { return }
                let progress = ProgressNotification.Parameters(progressToken: token, progress: 0, message: "listening")
                try? await server.notify(ProgressNotification.message(progress))
            }
        }
        await server.withMethodHandler(ListResources.self) { _ in ListResources.Result(resources: resources) }
        await server.withMethodHandler(ReadResource.self) { parameters in
            do throws(ToolError) {
                return ReadResource.Result(contents: [try await read(parameters.uri)])
            } catch {
                // An unknown resource is the request's mistake; a socket or file that fails is the server's.
                let isKnown = [Self.profileURI, Self.eventsURI].contains(parameters.uri)
                throw isKnown ? MCPError.internalError(error.description) : MCPError.invalidParams(error.description)
            }
        }
        try await server.start(transport: transport)
        await server.waitUntilCompleted()
        await server.stop()
    }

    /// The result of calling `tool` with `arguments`: the socket's response (without `ok`) as JSON text and as
    /// structured content, or an error result naming the command and the reason. `listening` runs when a wait is
    /// listening.
    public func call(
        _ tool: AgentTool, _ arguments: [String: Value]?, listening: @escaping @Sendable () async -> Void = {}
    ) async -> CallTool.Result {
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
            return CallTool.Result(
                content: [.text(text: answer.text, annotations: nil, _meta: nil)],
                structuredContent: Optional(answer.mcpValue),
                isError: false)
        } catch {
            logger.debug("\(error)")
            return CallTool.Result(
                content: [.text(text: error.description, annotations: nil, _meta: nil)], isError: true)
        }
    }

    /// The contents of the resource at `uri`; throws `ToolError` naming the command that failed, or an unknown
    /// resource.
    public func read(_ uri: String) async throws(ToolError) -> Resource.Content {
        switch uri {
        case Self.profileURI:
            let response = try await link.send(["command": .string(ControlCommand.describe.rawValue)], for: "describe")
            return .text((response["profile"] ?? .null).text, uri: uri, mimeType: "application/json")
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
            return .text(lines.map { $0 + "\n" }.joined(), uri: uri, mimeType: "application/jsonl")
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
