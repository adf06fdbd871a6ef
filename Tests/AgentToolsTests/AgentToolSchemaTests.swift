import AgentTools
import ControlProtocol
import Emulation
import Foundation
import Testing

/// The input schemas the agent reads say what the tools check: the same arguments, the same required ones, the
/// same choices; and the event types offered are the event log's.
@Suite struct AgentToolSchemaTests {
    /// A call of each tool that it takes, with every argument it has (one of the exclusive ones for set and fault).
    static let fullCalls: [AgentTool: [String: JSONValue]] = [
        .describe: [:], .status: [:], .centrals: [:], .counters: [:], .pairing: [:], .reset: [:],
        .state: ["set": ["target-power": 200]],
        .get: ["id": "battery-level"],
        .set: ["id": "battery-level", "fields": ["percent": 50]],
        .notify: ["id": "battery-level", "count": 2, "central": "c"],
        .fault: ["operation": "read", "id": "x", "nth": 1, "error": "unlikely-error"],
        .schedules: ["action": "pause", "id": "x"],
        .advertising: ["action": "start"],
        .disconnect: ["central": "c"],
        .recentEvents: ["type": "request", "characteristic": "x", "limit": 3],
        .waitForEvent: ["type": "request", "characteristic": "x", "timeout_seconds": 1],
    ]

    /// The optional arguments whose absence the full call cannot do without, because another argument needs them
    /// (a schedule's `id` goes with an action) or one of a set must be given; the schema says so in words.
    static let neededByOthers = [
        "set.fields": "give exactly one of `hex` and `fields`",
        "fault.error": "give exactly one of `error`, `delayMs` and `effect`",
        "schedules.action": "`id` goes with `action` pause or resume",
    ]

    @Test func everySchemaIsAClosedObjectWhosePropertiesAreDescribedAndTyped() {
        for tool in AgentTool.allCases {
            let schema = tool.inputSchema.object ?? [:]
            #expect(schema["type"] == "object", "\(tool)")
            #expect(schema["additionalProperties"] == false, "\(tool)")
            for (name, property) in schema["properties"]?.object ?? [:] {
                let property = property.object ?? [:]
                #expect(property["type"]?.string != nil, "\(tool).\(name) has no type")
                #expect((property["description"]?.string ?? "").count > 10, "\(tool).\(name) is not described")
            }
            #expect((tool.definition["description"]?.string ?? "").count > 20, "\(tool) is not described")
            #expect(tool.definition["name"]?.string == tool.rawValue)
        }
    }

    @Test func theSchemasArgumentsAreTheOnesTheToolsTakeAndRequire() throws {
        for tool in AgentTool.allCases {
            let schema = tool.inputSchema.object ?? [:]
            let properties = Set((schema["properties"]?.object ?? [:]).keys)
            let required = (schema["required"]?.array ?? []).compactMap(\.string)
            let full = try #require(Self.fullCalls[tool], "\(tool) has no full call here")
            // The full call passes, and names only properties of the schema.
            #expect(throws: Never.self, "\(tool)") { try tool.call(full) }
            #expect(Set(full.keys).isSubset(of: properties), "\(tool): \(full.keys) vs \(properties)")
            // Leaving out a required argument is refused, naming it; leaving out any other is not.
            for name in full.keys.sorted() {
                var call = full
                call[name] = nil
                let refusal: String? = {
                    do throws(ToolError) {
                        _ = try tool.call(call)
                        return nil
                    } catch { return error.reason }
                }()
                if required.contains(name) {
                    #expect(refusal == "`\(name)` is required", "\(tool) without \(name)")
                } else {
                    #expect(refusal == Self.neededByOthers["\(tool.rawValue).\(name)"], "\(tool) without \(name)")
                }
            }
            #expect(Set(required).isSubset(of: full.keys), "\(tool)")
            // A property the schema does not have is refused.
            #expect(throws: ToolError.self, "\(tool)") { try tool.call(full.merging(["extra": 1]) { $1 }) }
        }
    }

    @Test func everyChoiceTheSchemaOffersIsTaken() throws {
        for tool in AgentTool.allCases {
            let properties = tool.inputSchema.object?["properties"]?.object ?? [:]
            for (name, property) in properties {
                guard let choices = property.object?["enum"]?.array else { continue }
                for choice in choices {
                    var call = Self.fullCalls[tool] ?? [:]
                    call[name] = choice
                    // A list takes no id; every other choice goes with the full call.
                    if tool == .schedules && choice == "list" { call["id"] = nil }
                    if tool == .fault && name == "effect" { call["error"] = nil }
                    #expect(throws: Never.self, "\(tool).\(name) = \(choice)") { try tool.call(call) }
                }
            }
        }
    }

    @Test func theEventTypesAreTheEventLogsAsDocumented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let document = try String(
            contentsOf: root.appendingPathComponent("docs/control-and-events.md"), encoding: .utf8)
        let table = try #require(document.components(separatedBy: "## The event log").last)
        // Rows of the types table start with one or two backquoted types: "| `connected`, `disconnected` |".
        var documented: [String] = []
        for line in table.split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            documented += cell.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }
        }
        #expect(documented == EventFilter.types)
    }
}
