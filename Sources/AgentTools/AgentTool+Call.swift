import ControlProtocol

extension AgentTool {
    /// The control socket call `arguments` ask for, checked as the input schema says (types, ranges, which
    /// arguments go together) so a mistake is named before anything is sent. Arguments pass on under the control
    /// protocol's own names, and only those given: the socket applies its own defaults, as for `blemu ctl`.
    public func call(_ arguments: [String: JSONValue]?) throws(ToolError) -> ToolCall {
        let given = try ToolArguments(arguments, of: self)
        var request: [String: JSONValue] = ["command": .string(command.rawValue)]
        switch self {
        case .describe, .status, .centrals, .counters, .pairing, .reset:
            break
        case .state:
            if let values = try given.object("set") { request["set"] = .object(values) }
        case .get:
            request["id"] = .string(try given.requiredString("id"))
        case .set:
            request["id"] = .string(try given.requiredString("id"))
            let hex = try given.string("hex")
            let fields = try given.object("fields")
            guard (hex == nil) != (fields == nil) else { throw given.error("give exactly one of `hex` and `fields`") }
            if let hex { request["hex"] = .string(hex) }
            if let fields { request["fields"] = .object(fields) }
        case .notify:
            request["id"] = .string(try given.requiredString("id"))
            if let count = try given.integer("count", in: 1...Self.largestNotifyCount) {
                request["count"] = .integer(Int64(count))
            }
            if let central = try given.string("central") { request["central"] = .string(central) }
        case .fault:
            guard let operation = try given.choice("operation", of: ["read", "write"]) else {
                throw given.error("`operation` is required")
            }
            request["operation"] = .string(operation)
            if let id = try given.string("id") { request["id"] = .string(id) }
            if let nth = try given.integer("nth", in: 1...Int(Int32.max)) { request["nth"] = .integer(Int64(nth)) }
            let outcomes = ["error", "delayMs", "effect"].filter(given.has)
            guard outcomes.count == 1 else { throw given.error("give exactly one of `error`, `delayMs` and `effect`") }
            // A code as a number is what the socket takes too (`"error":128`); a name or 0x80 is text.
            if case .integer(let code)? = given.json("error") {
                guard (0...255).contains(code) else { throw given.error("`error` must be a code from 0 to 255") }
                request["error"] = .integer(code)
            } else if let error = try given.string("error") {
                request["error"] = .string(error)
            }
            if let delay = try given.integer("delayMs", in: 0...Int(Int32.max)) {
                request["delayMs"] = .integer(Int64(delay))
            }
            if let effect = try given.choice("effect", of: ["disconnect", "stop-advertising"]) {
                request["effect"] = .string(effect)
            }
        case .schedules:
            let action = try given.choice("action", of: ["list", "pause", "resume"]) ?? "list"
            let id = try given.string("id")
            if action == "list" {
                guard id == nil else { throw given.error("`id` goes with `action` pause or resume") }
            } else {
                request["action"] = .string(action)
                if let id { request["id"] = .string(id) }
            }
        case .advertising:
            guard let action = try given.choice("action", of: ["start", "stop"]) else {
                throw given.error("`action` is required")
            }
            request["action"] = .string(action)
        case .disconnect:
            if let central = try given.string("central") { request["central"] = .string(central) }
        case .recentEvents:
            let filter = try eventFilter(given, typeRequired: false)
            let limit = try given.integer("limit", in: 1...Self.recentEventsKept) ?? Self.recentEventsKept
            return .recentEvents(filter, limit: limit)
        case .waitForEvent:
            let filter = try eventFilter(given, typeRequired: true)
            let seconds = try given.seconds("timeout_seconds", maximum: Self.longestWait) ?? Self.defaultWait
            return .waitForEvent(filter, timeout: .milliseconds(Int64((seconds * 1000).rounded(.up))))
        }
        return .command(request)
    }

    /// The `type` and `characteristic` arguments as a filter.
    private func eventFilter(_ given: ToolArguments, typeRequired: Bool) throws(ToolError) -> EventFilter {
        let type = try given.choice("type", of: EventFilter.types)
        if typeRequired && type == nil { throw given.error("`type` is required") }
        return EventFilter(type: type, characteristic: try given.string("characteristic"))
    }
}
