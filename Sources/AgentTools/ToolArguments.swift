import ControlProtocol

/// A tool call's arguments, read against what the tool's schema allows: a client need not check the schema, so
/// every type, range and combination is checked here again, and an argument the tool does not know is refused
/// (a misspelt `count` must not be dropped silently).
struct ToolArguments {
    /// The tool, named in every error.
    let tool: AgentTool
    private let values: [String: JSONValue]

    /// `arguments` of a call of `tool`; throws `ToolError` naming the first argument the tool does not take.
    init(_ arguments: [String: JSONValue]?, of tool: AgentTool) throws(ToolError) {
        self.tool = tool
        // JSON null is how some clients leave an optional argument out.
        values = (arguments ?? [:]).filter { $0.value != .null }
        let known = Set(tool.parameters.map(\.name))
        if let unknown = values.keys.sorted().first(where: { !known.contains($0) }) {
            let takes =
                known.isEmpty
                ? "takes no arguments" : "takes \(tool.parameters.map { "`\($0.name)`" }.joined(separator: ", "))"
            throw error("unknown argument `\(unknown)` (\(tool.rawValue) \(takes))")
        }
    }

    /// Whether `name` was given.
    func has(_ name: String) -> Bool { values[name] != nil }

    /// A required string argument, not empty.
    func requiredString(_ name: String) throws(ToolError) -> String {
        guard let string = try string(name) else { throw error("`\(name)` is required") }
        return string
    }

    /// An optional string argument; given, it must not be empty.
    func string(_ name: String) throws(ToolError) -> String? {
        guard let value = values[name] else { return nil }
        guard let string = value.string else {
            throw error("`\(name)` must be a string, not \(value.text)")
        }
        guard !string.isEmpty else { throw error("`\(name)` must not be empty") }
        return string
    }

    /// An optional string argument that must be one of `allowed`.
    func choice(_ name: String, of allowed: [String]) throws(ToolError) -> String? {
        guard let string = try string(name) else { return nil }
        guard allowed.contains(string) else {
            throw error("`\(name)` must be \(allowed.map { "`\($0)`" }.joined(separator: ", ")), not `\(string)`")
        }
        return string
    }

    /// An optional whole number in `range` (a client may send 3.0 for 3).
    func integer(_ name: String, in range: ClosedRange<Int>) throws(ToolError) -> Int? {
        guard let value = values[name] else { return nil }
        let integer: Int? =
            switch value {
            case .integer(let integer): Int(exactly: integer)
            case .real(let number): Int(exactly: number)
            default: nil
            }
        guard let integer, range.contains(integer) else {
            throw error(
                "`\(name)` must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(value.text)"
            )
        }
        return integer
    }

    /// An optional number of seconds, more than 0 and at most `maximum`.
    func seconds(_ name: String, maximum: Double) throws(ToolError) -> Double? {
        guard let value = values[name] else { return nil }
        let number: Double? =
            switch value {
            case .integer(let integer): Double(integer)
            case .real(let number): number
            default: nil
            }
        guard let number, number > 0, number <= maximum else {
            throw error(
                "`\(name)` must be a number of seconds above 0 and at most \(Int(maximum)), not \(value.text)"
            )
        }
        return number
    }

    /// An optional object argument with at least one member, as the control protocol's JSON.
    func object(_ name: String) throws(ToolError) -> [String: JSONValue]? {
        guard let value = values[name] else { return nil }
        guard let members = value.object else {
            throw error("`\(name)` must be an object, not \(value.text)")
        }
        guard !members.isEmpty else { throw error("`\(name)` must name at least one field") }
        return members
    }

    /// The raw value of `name`, as the control protocol's JSON.
    func json(_ name: String) -> JSONValue? { values[name] }

    /// An error of this tool.
    func error(_ reason: String) -> ToolError { ToolError(tool.rawValue, reason) }
}
