import ArgumentParser
import DBus

extension BusAddress: ExpressibleByArgument {
    /// The bus a `--bus` option names: `system`, `session`, or a D-Bus address such as `unix:path=/tmp/bus`.
    public init(argument: String) {
        switch argument {
        case "system": self = .system
        case "session": self = .session
        default: self = .address(argument)
        }
    }

    /// How `--help` shows the default.
    public var defaultValueDescription: String {
        switch self {
        case .system: "system"
        case .session: "session"
        case .address(let address): address
        }
    }
}
