import ControlProtocol
import GATTModel

extension FieldValue {
    /// The value as the control socket and the event log carry it: numbers and booleans as JSON's, flags as a list
    /// of names, text as a string, bytes as hex.
    var json: JSONValue {
        switch self {
        case .integer(let number): .integer(number)
        case .real(let number): .real(number)
        case .boolean(let flag): .bool(flag)
        case .flags(let names): .array(names.map(JSONValue.string))
        case .text(let text): .string(text)
        case .bytes(let bytes): .string(Hex.string(bytes, separator: ""))
        }
    }
}
