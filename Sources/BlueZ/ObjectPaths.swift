/// Where each published entity lives on the bus: one pure function, so tests and logs agree on paths.
///
/// `/org/blemu/app<N>/service<i>/char<j>/desc<k>`, indexes in declaration order (handle order), with the
/// application root holding the ObjectManager that bluetoothd calls `GetManagedObjects` on.
public struct ObjectPaths: Hashable, Sendable {
    /// The application root, e.g. `/org/blemu/app0`.
    public let root: String

    /// Paths under `/org/blemu/app<instance>`; a distinct instance per manager lets several run in one process.
    public init(instance: Int = 0) { root = "/org/blemu/app\(instance)" }

    /// The path of the `service`th service.
    public func service(_ service: Int) -> String { "\(root)/service\(service)" }

    /// The path of a characteristic.
    public func characteristic(_ characteristic: Int, service: Int) -> String {
        "\(self.service(service))/char\(characteristic)"
    }

    /// The path of a descriptor.
    public func descriptor(_ descriptor: Int, characteristic: Int, service: Int) -> String {
        "\(self.characteristic(characteristic, service: service))/desc\(descriptor)"
    }

    /// The path of the advertisement object.
    public var advertisement: String { "\(root)/advertisement" }

    /// The path of the pairing agent.
    public var agent: String { "\(root)/agent" }
}
