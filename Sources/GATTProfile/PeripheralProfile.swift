import GATTModel

/// A whole device as a profile declares it: its name, advertisement, pairing, GATT services and behaviour.
public struct PeripheralProfile: Hashable, Sendable {
    /// The device name: the GAP Device Name (bluetoothd serves the adapter `Alias`) and the default local name.
    public var name: String
    /// What the device advertises.
    public var advertisement: Advertisement
    /// How the device pairs.
    public var pairing: PairingSettings
    /// The GATT services, in declaration order.
    public var services: [Service]
    /// How the device behaves at run time (values that change, answers to writes, faults).
    public var behaviour: Behaviour

    /// A profile from its parts.
    public init(
        name: String, advertisement: Advertisement = Advertisement(), pairing: PairingSettings = PairingSettings(),
        services: [Service] = [], behaviour: Behaviour = Behaviour()
    ) {
        self.name = name
        self.advertisement = advertisement
        self.pairing = pairing
        self.services = services
        self.behaviour = behaviour
    }

    /// Every characteristic of every service, in declaration order.
    public var characteristics: [Characteristic] { services.flatMap(\.characteristics) }

    /// The characteristic with an id, if any.
    public func characteristic(id: String) -> Characteristic? { characteristics.first { $0.id == id } }
}
