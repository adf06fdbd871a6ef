import AgentTools
import ControlProtocol
import Emulation
import Testing

/// Each tool sends exactly its control command, with the arguments under the protocol's names, and a call the
/// socket would refuse (or worse, misread) is refused before anything is sent.
@Suite struct AgentToolMappingTests {
    /// The request `tool` sends for `arguments`; fails the test when the call is refused.
    private func request(_ tool: AgentTool, _ arguments: [String: JSONValue] = [:]) throws -> [String: JSONValue] {
        guard case .command(let request) = try tool.call(arguments) else {
            Issue.record("\(tool) did not map to a plain command")
            return [:]
        }
        return request
    }

    /// Why `tool` refuses `arguments`, or nil when it takes them.
    private func refusal(_ tool: AgentTool, _ arguments: [String: JSONValue]) -> String? {
        do throws(ToolError) {
            _ = try tool.call(arguments)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func everyControlCommandHasATool() {
        // `handle` is a stream that outlives a tool call: the one command with no tool.
        let exchanges = ControlCommand.allCases.filter { $0 != .handle }
        for command in exchanges {
            let tools = AgentTool.tools(sending: command)
            #expect(!tools.isEmpty, "\(command) has no tool")
            #expect(tools.allSatisfy { $0.command == command }, "\(command): \(tools)")
        }
        #expect(AgentTool.tools(sending: .handle).isEmpty)
        #expect(Set(AgentTool.allCases.map(\.command)) == Set(exchanges))
        // Tool names are the commands' own, but for the two that read the events.
        let renamed = AgentTool.allCases.filter { $0.rawValue != $0.command.rawValue }
        #expect(renamed == [.recentEvents, .waitForEvent])
    }

    @Test func commandsCarryTheirArgumentsUnderTheProtocolsNames() throws {
        #expect(try request(.get, ["id": "battery-level"]) == ["command": "get", "id": "battery-level"])
        #expect(
            try request(.set, ["id": "battery-level", "fields": ["percent": 80]])
                == ["command": "set", "id": "battery-level", "fields": ["percent": 80]])
        #expect(
            try request(.set, ["id": "heart-rate-measurement", "fields": ["flags": ["sensor-contact-detected"]]])
                == ["command": "set", "id": "heart-rate-measurement", "fields": ["flags": ["sensor-contact-detected"]]])
        #expect(try request(.set, ["id": "x", "hex": "0E5A"]) == ["command": "set", "id": "x", "hex": "0E5A"])
        // A whole number a client sends as 3.0 is still 3 on the socket.
        #expect(
            try request(.notify, ["id": "x", "count": .real(3), "central": "c1"])
                == ["command": "notify", "id": "x", "count": 3, "central": "c1"])
        #expect(try request(.notify, ["id": "x"]) == ["command": "notify", "id": "x"])
        #expect(
            try request(.fault, ["operation": "read", "id": "x", "nth": 2, "error": "unlikely-error"])
                == ["command": "fault", "operation": "read", "id": "x", "nth": 2, "error": "unlikely-error"])
        #expect(
            try request(.fault, ["operation": "write", "error": 128]) == [
                "command": "fault", "operation": "write", "error": 128,
            ])
        #expect(
            try request(.fault, ["operation": "read", "delayMs": 500]) == [
                "command": "fault", "operation": "read", "delayMs": 500,
            ])
        #expect(
            try request(.fault, ["operation": "write", "effect": "stop-advertising"])
                == ["command": "fault", "operation": "write", "effect": "stop-advertising"])
        #expect(try request(.schedules) == ["command": "schedules"])
        #expect(try request(.schedules, ["action": "list"]) == ["command": "schedules"])
        #expect(
            try request(.schedules, ["action": "pause", "id": "x"]) == [
                "command": "schedules", "action": "pause", "id": "x",
            ])
        #expect(try request(.schedules, ["action": "resume"]) == ["command": "schedules", "action": "resume"])
        #expect(try request(.advertising, ["action": "stop"]) == ["command": "advertising", "action": "stop"])
        #expect(try request(.disconnect) == ["command": "disconnect"])
        #expect(try request(.disconnect, ["central": "c1"]) == ["command": "disconnect", "central": "c1"])
        for tool in [AgentTool.describe, .centrals, .counters, .pairing, .reset] {
            #expect(try request(tool) == ["command": .string(tool.rawValue)])
        }
        // Some clients send null for an argument left out.
        #expect(try request(.disconnect, ["central": .null]) == ["command": "disconnect"])
    }

    @Test func theEventToolsReadTheEventsCommand() throws {
        let recent = try AgentTool.recentEvents.call(["type": "notification", "characteristic": "x", "limit": 5])
        #expect(recent == .recentEvents(EventFilter(type: "notification", characteristic: "x"), limit: 5))
        #expect(recent.request == ["command": "events"])
        #expect(try AgentTool.recentEvents.call([:]) == .recentEvents(EventFilter(), limit: 256))

        let wait = try AgentTool.waitForEvent.call(["type": "request", "timeout_seconds": 2.5])
        #expect(wait == .waitForEvent(EventFilter(type: "request"), timeout: .milliseconds(2500)))
        #expect(wait.request == ["command": "events", "follow": true])
        #expect(
            try AgentTool.waitForEvent.call(["type": "reset"])
                == .waitForEvent(EventFilter(type: "reset"), timeout: .seconds(10)))
    }

    @Test func mistakesAreNamedBeforeAnythingIsSent() {
        let cases: [(AgentTool, [String: JSONValue], String)] = [
            (.get, [:], "get: `id` is required"),
            (.get, ["id": 5], "get: `id` must be a string, not 5"),
            (.get, ["id": ""], "get: `id` must not be empty"),
            (.get, ["id": "x", "idd": "y"], "get: unknown argument `idd` (get takes `id`)"),
            (.centrals, ["id": "x"], "centrals: unknown argument `id` (centrals takes no arguments)"),
            (.set, ["id": "x"], "set: give exactly one of `hex` and `fields`"),
            (.set, ["id": "x", "hex": "50", "fields": ["percent": 1]], "set: give exactly one of `hex` and `fields`"),
            (.set, ["id": "x", "fields": [:]], "set: `fields` must name at least one field"),
            (.set, ["id": "x", "fields": "percent=1"], "set: `fields` must be an object, not \"percent=1\""),
            (.notify, ["id": "x", "count": 0], "notify: `count` must be a whole number from 1 to 100000, not 0"),
            (
                .notify, ["id": "x", "count": 100_001],
                "notify: `count` must be a whole number from 1 to 100000, not 100001"
            ),
            (.notify, ["id": "x", "count": 1.5], "notify: `count` must be a whole number from 1 to 100000, not 1.5"),
            (.fault, ["error": "unlikely-error"], "fault: `operation` is required"),
            (.fault, ["operation": "erase", "error": "x"], "fault: `operation` must be `read`, `write`, not `erase`"),
            (.fault, ["operation": "read"], "fault: give exactly one of `error`, `delayMs` and `effect`"),
            (
                .fault, ["operation": "read", "error": "x", "delayMs": 5],
                "fault: give exactly one of `error`, `delayMs` and `effect`"
            ),
            (.fault, ["operation": "read", "error": 300], "fault: `error` must be a code from 0 to 255"),
            (
                .fault, ["operation": "read", "nth": 0, "error": "x"],
                "fault: `nth` must be a whole number from 1 to 2147483647, not 0"
            ),
            (
                .fault, ["operation": "read", "effect": "explode"],
                "fault: `effect` must be `disconnect`, `stop-advertising`, not `explode`"
            ),
            (.schedules, ["id": "x"], "schedules: `id` goes with `action` pause or resume"),
            (.schedules, ["action": "stop"], "schedules: `action` must be `list`, `pause`, `resume`, not `stop`"),
            (.advertising, [:], "advertising: `action` is required"),
            (.recentEvents, ["limit": 0], "recent_events: `limit` must be a whole number from 1 to 256, not 0"),
            (.recentEvents, ["limit": 257], "recent_events: `limit` must be a whole number from 1 to 256, not 257"),
            (.waitForEvent, [:], "wait_for_event: `type` is required"),
            (
                .waitForEvent, ["type": "notifications"],
                "wait_for_event: `type` must be `state`, `connected`, `disconnected`, `request`, `subscribed`, `unsubscribed`, `notification`, `indication`, `queue-full`, `queue-ready`, `outbox-full`, `fault`, `pairing`, `restart`, `protocol`, `handler`, `reset`, `lines-dropped`, not `notifications`"
            ),
            (
                .waitForEvent, ["type": "reset", "timeout_seconds": 0],
                "wait_for_event: `timeout_seconds` must be a number of seconds above 0 and at most 300, not 0"
            ),
            (
                .waitForEvent, ["type": "reset", "timeout_seconds": 301],
                "wait_for_event: `timeout_seconds` must be a number of seconds above 0 and at most 300, not 301"
            ),
        ]
        for (tool, arguments, expected) in cases {
            #expect(refusal(tool, arguments) == expected, "\(tool) \(arguments)")
        }
    }

    @Test func aFilterMatchesOnTypeAndCharacteristic() throws {
        let notification = try JSONValue(
            parsing:
                #"{"time":"2026-01-01T00:00:00.000Z","type":"notification","characteristic":"battery-level","value":"50","centrals":0}"#
        )
        let connected = try JSONValue(parsing: #"{"time":"2026-01-01T00:00:00.000Z","type":"connected","central":"c"}"#)
        #expect(EventFilter().matches(notification) && EventFilter().matches(connected))
        #expect(EventFilter(type: "notification").matches(notification))
        #expect(!EventFilter(type: "notification").matches(connected))
        #expect(EventFilter(type: "notification", characteristic: "battery-level").matches(notification))
        #expect(!EventFilter(type: "notification", characteristic: "heart-rate-measurement").matches(notification))
        // An event about no characteristic never matches a characteristic.
        #expect(!EventFilter(characteristic: "battery-level").matches(connected))
    }
}
