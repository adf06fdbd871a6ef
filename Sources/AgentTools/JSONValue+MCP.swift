import ControlProtocol
import MCP

extension JSONValue {
    /// The MCP SDK's value as the control protocol's JSON: the SDK reads a data URL string as `.data`, which goes
    /// back to the string it was. (`MCP.Value` in full: in here `Value` is the dictionary literal's element type.)
    init(_ value: MCP.Value) {
        switch value {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .int(let integer): self = .integer(Int64(integer))
        case .double(let number): self = .number(number)
        case .string(let string): self = .string(string)
        case .data(let mimeType, let data): self = .string(data.dataURLEncoded(mimeType: mimeType))
        case .array(let elements): self = .array(elements.map(JSONValue.init))
        case .object(let members): self = .object(members.mapValues(JSONValue.init))
        }
    }

    /// The value as the MCP SDK's, for a result's structured content.
    var mcpValue: MCP.Value {
        switch self {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .integer(let integer): Int(exactly: integer).map(MCP.Value.int) ?? .double(Double(integer))
        case .real(let number): .double(number)
        case .string(let string): .string(string)
        case .array(let elements): .array(elements.map(\.mcpValue))
        case .object(let members): .object(members.mapValues(\.mcpValue))
        }
    }
}
