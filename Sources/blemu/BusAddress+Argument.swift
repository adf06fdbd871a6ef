import DBus

extension BusAddress {
    /// The bus a `--bus` option names: `system`, `session`, or a D-Bus address such as `unix:path=/tmp/bus`.
    init(argument: String) {
        switch argument {
        case "system": self = .system
        case "session": self = .session
        default: self = .address(argument)
        }
    }
}
