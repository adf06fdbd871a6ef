import ArgumentParser
import DBus

extension BusAddress: ExpressibleByArgument {
    /// The bus a `--bus` option names: `system`, `session`, or a D-Bus address such as `unix:path=/tmp/bus`.
    public init(argument: String) { self.init(name: argument) }

    /// How `--help` shows the default.
    public var defaultValueDescription: String { name }
}
