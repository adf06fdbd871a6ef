import GATTModel

/// A string of the `Flags` property of BlueZ's `GattCharacteristic1` and `GattDescriptor1` (BlueZ 5.66,
/// doc/gatt-api.txt and src/gatt-database.c `parse_chrc_flags`). Any other string fails the whole registration,
/// so these are the only place the strings are spelled.
public enum BlueZFlag: String, Hashable, Sendable, CaseIterable {
    case broadcast
    case read
    case writeWithoutResponse = "write-without-response"
    case write
    case notify
    case indicate
    case authenticatedSignedWrites = "authenticated-signed-writes"
    case extendedProperties = "extended-properties"
    case reliableWrite = "reliable-write"
    case writableAuxiliaries = "writable-auxiliaries"
    case encryptRead = "encrypt-read"
    case encryptWrite = "encrypt-write"
    case encryptAuthenticatedRead = "encrypt-authenticated-read"
    case encryptAuthenticatedWrite = "encrypt-authenticated-write"
    case secureRead = "secure-read"
    case secureWrite = "secure-write"
    case authorize
    case encryptNotify = "encrypt-notify"
    case encryptAuthenticatedNotify = "encrypt-authenticated-notify"
    case secureNotify = "secure-notify"
    case encryptIndicate = "encrypt-indicate"
    case encryptAuthenticatedIndicate = "encrypt-authenticated-indicate"
    case secureIndicate = "secure-indicate"

    /// The flags descriptors may carry; bluetoothd rejects the others on a descriptor.
    public static let descriptorFlags: Set<BlueZFlag> = [
        .read, .write, .encryptRead, .encryptWrite, .encryptAuthenticatedRead, .encryptAuthenticatedWrite,
        .secureRead, .secureWrite, .authorize,
    ]

    /// The flag for a Core Bluetooth property; nil for the two that BlueZ expresses as security flags instead.
    static func flag(for property: CharacteristicProperties) -> BlueZFlag? {
        switch property {
        case .broadcast: .broadcast
        case .read: .read
        case .writeWithoutResponse: .writeWithoutResponse
        case .write: .write
        case .notify: .notify
        case .indicate: .indicate
        case .authenticatedSignedWrites: .authenticatedSignedWrites
        case .extendedProperties: .extendedProperties
        case .reliableWrite: .reliableWrite
        case .writableAuxiliaries: .writableAuxiliaries
        default: nil
        }
    }

    /// The flag that makes an operation require a security level; nil for `.none`.
    static func flag(for level: SecurityLevel, on operation: AttributeOperation) -> BlueZFlag? {
        switch (operation, level) {
        case (_, .none): nil
        case (.read, .encrypted): .encryptRead
        case (.read, .authenticated): .encryptAuthenticatedRead
        case (.read, .secure): .secureRead
        case (.write, .encrypted): .encryptWrite
        case (.write, .authenticated): .encryptAuthenticatedWrite
        case (.write, .secure): .secureWrite
        case (.notify, .encrypted): .encryptNotify
        case (.notify, .authenticated): .encryptAuthenticatedNotify
        case (.notify, .secure): .secureNotify
        case (.indicate, .encrypted): .encryptIndicate
        case (.indicate, .authenticated): .encryptAuthenticatedIndicate
        case (.indicate, .secure): .secureIndicate
        }
    }
}
