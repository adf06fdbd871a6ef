/// A characteristic descriptor (Core Spec Vol 3, Part G, 3.3.3).
///
/// bluetoothd creates the Client Characteristic Configuration (0x2902) and Extended Properties (0x2900)
/// descriptors itself (BlueZ src/gatt-database.c); declaring them yields duplicates, so profiles reject them.
public struct Descriptor: Hashable, Sendable {
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// The value; descriptors in blemu are served from their declared value.
    public var value: [UInt8]
    /// Whether centrals may read and write it.
    public var permissions: AttributePermissions
    /// The security each operation requires (read and write only).
    public var security: SecurityRequirements

    /// A descriptor from its parts; readable and not writable unless said otherwise.
    public init(
        uuid: BluetoothUUID, value: [UInt8], permissions: AttributePermissions = .readable,
        security: SecurityRequirements = SecurityRequirements()
    ) {
        self.uuid = uuid
        self.value = value
        self.permissions = permissions
        self.security = security
    }

    /// 0x2901 Characteristic User Description: UTF-8 text (Core Spec Vol 3, Part G, 3.3.3.2).
    public static func userDescription(_ text: String) -> Descriptor {
        Descriptor(uuid: .characteristicUserDescription, value: Array(text.utf8))
    }

    /// 0x2904 Characteristic Presentation Format (Core Spec Vol 3, Part G, 3.3.3.5).
    public static func presentationFormat(_ format: PresentationFormat) -> Descriptor {
        Descriptor(uuid: .characteristicPresentationFormat, value: format.bytes)
    }
}

/// The seven bytes of a Characteristic Presentation Format descriptor.
public struct PresentationFormat: Hashable, Sendable {
    /// The format code (Assigned Numbers 2.4.1), e.g. 0x0E for sint16.
    public var format: UInt8
    /// The base-10 exponent applied to the value.
    public var exponent: Int8
    /// The unit UUID (Assigned Numbers 3.5), e.g. 0x272F for degrees Celsius.
    public var unit: UInt16
    /// The namespace of `description`: 0x01 is the Bluetooth SIG.
    public var namespace: UInt8
    /// The description within the namespace.
    public var description: UInt16

    /// A format from its fields.
    public init(format: UInt8, exponent: Int8 = 0, unit: UInt16, namespace: UInt8 = 1, description: UInt16 = 0) {
        self.format = format
        self.exponent = exponent
        self.unit = unit
        self.namespace = namespace
        self.description = description
    }

    /// The little-endian bytes on the air.
    public var bytes: [UInt8] {
        [
            format, UInt8(bitPattern: exponent), UInt8(unit & 0xFF), UInt8(unit >> 8), namespace,
            UInt8(description & 0xFF), UInt8(description >> 8),
        ]
    }

    /// Parses the seven bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 7 else { return nil }
        self.init(
            format: bytes[0], exponent: Int8(bitPattern: bytes[1]), unit: UInt16(bytes[2]) | UInt16(bytes[3]) << 8,
            namespace: bytes[4], description: UInt16(bytes[5]) | UInt16(bytes[6]) << 8)
    }
}

extension BluetoothUUID {
    /// 0x2900 Characteristic Extended Properties: bluetoothd's to create.
    public static let characteristicExtendedProperties = BluetoothUUID(0x2900)
    /// 0x2901 Characteristic User Description.
    public static let characteristicUserDescription = BluetoothUUID(0x2901)
    /// 0x2902 Client Characteristic Configuration: bluetoothd's to create.
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    /// 0x2904 Characteristic Presentation Format.
    public static let characteristicPresentationFormat = BluetoothUUID(0x2904)
    /// 0x1800 Generic Access: bluetoothd's own service.
    public static let genericAccess = BluetoothUUID(0x1800)
    /// 0x1801 Generic Attribute: bluetoothd's own service.
    public static let genericAttribute = BluetoothUUID(0x1801)
}
