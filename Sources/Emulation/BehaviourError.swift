/// Why a profile's behaviour cannot be run: found when the engines are built, never mid-run.
public enum BehaviourError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A replay file could not be read or parsed; `line` is 1-based, 0 when the whole file is at fault.
    case replay(file: String, line: Int, message: String)
    /// The behaviour names a characteristic the profile does not declare.
    case unknownCharacteristic(String)
    /// A generator or `set` names a field the characteristic's layout does not have.
    case unknownField(characteristicID: String, field: String)

    /// A one-line explanation; replay errors read `file:line: message` like profile errors.
    public var description: String {
        switch self {
        case .replay(let file, let line, let message): line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
        case .unknownCharacteristic(let id): "behaviour names unknown characteristic `\(id)`"
        case .unknownField(let id, let field): "characteristic `\(id)` has no field `\(field)`"
        }
    }
}
