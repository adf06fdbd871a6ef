/// A GATT service: Core Bluetooth's `CBMutableService` (Core Spec Vol 3, Part G, 3.1).
public struct Service: Hashable, Sendable {
    /// A stable identifier, unique in its profile, that included services refer to.
    public var id: String
    /// The service type.
    public var uuid: BluetoothUUID
    /// Primary services are discovered by type; secondary ones only through inclusion.
    public var isPrimary: Bool
    /// The ids of the services this one includes.
    public var includedServiceIDs: [String]
    /// The characteristics, in declaration (and handle) order.
    public var characteristics: [Characteristic]

    /// A service from its parts.
    public init(
        id: String, uuid: BluetoothUUID, isPrimary: Bool = true, includedServiceIDs: [String] = [],
        characteristics: [Characteristic] = []
    ) {
        self.id = id
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includedServiceIDs = includedServiceIDs
        self.characteristics = characteristics
    }
}
