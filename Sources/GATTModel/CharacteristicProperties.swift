/// What a characteristic declares it can do: Core Bluetooth's `CBCharacteristicProperties`, plus BlueZ's
/// `reliable-write` and `writable-auxiliaries` (Core Spec Vol 3, Part G, 3.3.1.1 and 3.3.3.1).
///
/// The raw values of Core Bluetooth's ten properties match `CBCharacteristicProperties`.
public struct CharacteristicProperties: OptionSet, Hashable, Sendable {
    /// The bits.
    public let rawValue: UInt16
    /// Properties from their bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Values may be broadcast in advertisements (Server Characteristic Configuration).
    public static let broadcast = Self(rawValue: 0x001)
    /// Centrals may read the value.
    public static let read = Self(rawValue: 0x002)
    /// Centrals may write without a response; errors never reach them.
    public static let writeWithoutResponse = Self(rawValue: 0x004)
    /// Centrals may write with a response.
    public static let write = Self(rawValue: 0x008)
    /// The value may be notified (unacknowledged).
    public static let notify = Self(rawValue: 0x010)
    /// The value may be indicated (each one confirmed by the central).
    public static let indicate = Self(rawValue: 0x020)
    /// Centrals may write with an authentication signature.
    public static let authenticatedSignedWrites = Self(rawValue: 0x040)
    /// The characteristic has an Extended Properties descriptor (bluetoothd creates it).
    public static let extendedProperties = Self(rawValue: 0x080)
    /// Only trusted (paired) centrals may subscribe to notifications.
    public static let notifyEncryptionRequired = Self(rawValue: 0x100)
    /// Only trusted (paired) centrals may subscribe to indications.
    public static let indicateEncryptionRequired = Self(rawValue: 0x200)
    /// Reliable (queued, all-or-nothing) writes are allowed: an extended property.
    public static let reliableWrite = Self(rawValue: 0x400)
    /// The User Description descriptor is writable: an extended property.
    public static let writableAuxiliaries = Self(rawValue: 0x800)

    /// Every property with its profile spelling, in declaration order: the one place these names are written.
    public static let names: [(property: CharacteristicProperties, name: String)] = [
        (.broadcast, "broadcast"),
        (.read, "read"),
        (.writeWithoutResponse, "write-without-response"),
        (.write, "write"),
        (.notify, "notify"),
        (.indicate, "indicate"),
        (.authenticatedSignedWrites, "authenticated-signed-writes"),
        (.extendedProperties, "extended-properties"),
        (.notifyEncryptionRequired, "notify-encryption-required"),
        (.indicateEncryptionRequired, "indicate-encryption-required"),
        (.reliableWrite, "reliable-write"),
        (.writableAuxiliaries, "writable-auxiliaries"),
    ]

    /// The property a profile spelling names, or nil.
    public init?(name: String) {
        guard let match = Self.names.first(where: { $0.name == name }) else { return nil }
        self = match.property
    }

    /// The profile spellings of the properties in the set, in declaration order.
    public var names: [String] { Self.names.filter { contains($0.property) }.map(\.name) }

    /// Any way a central can write the value.
    public static let anyWrite: Self = [.write, .writeWithoutResponse, .authenticatedSignedWrites, .reliableWrite]
    /// Any way the value can be pushed to a central.
    public static let anyUpdate: Self = [.notify, .indicate]
}

/// Who may read and write an attribute's value: Core Bluetooth's `CBAttributePermissions`.
public struct AttributePermissions: OptionSet, Hashable, Sendable {
    /// The bits, matching `CBAttributePermissions`.
    public let rawValue: UInt8
    /// Permissions from their bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Any central may read.
    public static let readable = Self(rawValue: 0x01)
    /// Any central may write.
    public static let writeable = Self(rawValue: 0x02)
    /// Only centrals on an encrypted link may read.
    public static let readEncryptionRequired = Self(rawValue: 0x04)
    /// Only centrals on an encrypted link may write.
    public static let writeEncryptionRequired = Self(rawValue: 0x08)

    /// Every permission with its profile spelling: the one place these names are written.
    public static let names: [(permission: AttributePermissions, name: String)] = [
        (.readable, "readable"),
        (.writeable, "writeable"),
        (.readEncryptionRequired, "read-encryption-required"),
        (.writeEncryptionRequired, "write-encryption-required"),
    ]

    /// The permission a profile spelling names, or nil.
    public init?(name: String) {
        guard let match = Self.names.first(where: { $0.name == name }) else { return nil }
        self = match.permission
    }

    /// The profile spellings of the permissions in the set.
    public var names: [String] { Self.names.filter { contains($0.permission) }.map(\.name) }

    /// Whether a central may read at all (with or without encryption).
    public var allowsRead: Bool { !isDisjoint(with: [.readable, .readEncryptionRequired]) }
    /// Whether a central may write at all (with or without encryption).
    public var allowsWrite: Bool { !isDisjoint(with: [.writeable, .writeEncryptionRequired]) }
}
