import DBus

/// Where each published entity lives on the bus: one pure function, so tests and logs agree on paths.
///
/// `/org/blemu/app<N>/service<i>/char<j>/desc<k>`, indexes in declaration order (handle order), with the
/// application root holding the ObjectManager that bluetoothd calls `GetManagedObjects` on. Every path is built
/// with `ObjectPath.appending(_:)` from elements of letters and digits, so each is valid by construction.
public struct ObjectPaths: Hashable, Sendable {
    /// The application root, e.g. `/org/blemu/app0`.
    public let root: ObjectPath

    /// Paths under `/org/blemu/app<instance>`; a distinct instance per manager lets several run in one process.
    public init(instance: Int = 0) {
        root = ObjectPath.root.appending("org").appending("blemu").appending("app\(instance)")
    }

    /// The path of the `service`th service.
    public func service(_ service: Int) -> ObjectPath { root.appending("service\(service)") }

    /// The path of a characteristic.
    public func characteristic(_ characteristic: Int, service: Int) -> ObjectPath {
        self.service(service).appending("char\(characteristic)")
    }

    /// The path of a descriptor.
    public func descriptor(_ descriptor: Int, characteristic: Int, service: Int) -> ObjectPath {
        self.characteristic(characteristic, service: service).appending("desc\(descriptor)")
    }

    /// The path of the advertisement object.
    public var advertisement: ObjectPath { root.appending("advertisement") }

    /// The path of the pairing agent.
    public var agent: ObjectPath { root.appending("agent") }
}
