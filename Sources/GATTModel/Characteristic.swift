/// A characteristic as a profile or a program declares it: Core Bluetooth's `CBMutableCharacteristic`.
public struct Characteristic: Hashable, Sendable {
    /// The largest value an attribute may hold (Core Spec Vol 3, Part F, 3.2.9); bluetoothd truncates beyond it.
    public static let maximumValueLength = 512

    /// A stable identifier, unique in its profile, that behaviour, the control socket and logs refer to.
    public var id: String
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// What the declaration says the characteristic can do.
    public var properties: CharacteristicProperties
    /// Who may read and write the value.
    public var permissions: AttributePermissions
    /// The link security each operation requires, beyond what `permissions` and `properties` already say.
    public var security: SecurityRequirements
    /// The value: cached (constant, read-only) or dynamic (served and updated at run time).
    public var value: CharacteristicValue
    /// The longest value a central may write, at most `maximumValueLength`.
    public var maximumLength: Int
    /// The descriptors, other than the CCCD and Extended Properties that bluetoothd adds.
    public var descriptors: [Descriptor]
    /// The typed fields the value is made of, when declared that way: used to show and to generate values.
    public var layout: ValueLayout?

    /// A characteristic from its parts. Permissions default to what the properties need.
    public init(
        id: String, uuid: BluetoothUUID, properties: CharacteristicProperties,
        permissions: AttributePermissions? = nil, security: SecurityRequirements = SecurityRequirements(),
        value: CharacteristicValue = .dynamic([]), maximumLength: Int = Characteristic.maximumValueLength,
        descriptors: [Descriptor] = [], layout: ValueLayout? = nil
    ) {
        self.id = id
        self.uuid = uuid
        self.properties = properties
        self.permissions = permissions ?? Self.defaultPermissions(for: properties)
        self.security = security
        self.value = value
        self.maximumLength = maximumLength
        self.descriptors = descriptors
        self.layout = layout
    }

    /// The permissions a characteristic gets when none are declared: readable if it reads, writeable if it writes.
    public static func defaultPermissions(for properties: CharacteristicProperties) -> AttributePermissions {
        var permissions: AttributePermissions = []
        if properties.contains(.read) { permissions.insert(.readable) }
        if !properties.isDisjoint(with: .anyWrite) { permissions.insert(.writeable) }
        return permissions
    }

    // Inlinable so a caller reads the fields it needs where the characteristic lies (an array's element), instead
    // of copying the whole characteristic out to call a getter in another module:
    // Benchmarks/README.md, "The CLI's writes within 1.3x".
    /// The security each operation really requires, folding in the encryption permissions and properties.
    @inlinable public var effectiveSecurity: SecurityRequirements {
        var result = security
        if permissions.contains(.readEncryptionRequired) { result.require(.encrypted, for: .read) }
        if permissions.contains(.writeEncryptionRequired) { result.require(.encrypted, for: .write) }
        if properties.contains(.notifyEncryptionRequired) { result.require(.encrypted, for: .notify) }
        if properties.contains(.indicateEncryptionRequired) { result.require(.encrypted, for: .indicate) }
        return result
    }
}

/// A characteristic's value, in Core Bluetooth's two kinds.
public enum CharacteristicValue: Hashable, Sendable {
    /// A constant value: cached by the stack, so the characteristic is read-only (no write, notify or indicate).
    case cached([UInt8])
    /// A value served at run time, starting from these bytes.
    case dynamic([UInt8])

    // Inlinable for the reason `Characteristic.effectiveSecurity` is.
    /// The bytes, constant or initial.
    @inlinable public var bytes: [UInt8] {
        switch self {
        case .cached(let bytes), .dynamic(let bytes): bytes
        }
    }

    // Inlinable for the reason `Characteristic.effectiveSecurity` is.
    /// Whether the value is constant.
    @inlinable public var isCached: Bool {
        if case .cached = self { return true }
        return false
    }
}
