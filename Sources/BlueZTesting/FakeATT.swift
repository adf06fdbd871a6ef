// What bluetoothd 5.66 decides on its own, before or after asking the app: the flags it accepts
// (src/gatt-database.c `parse_chrc_flags`, `parse_desc_flags`), the static permission check
// (src/shared/gatt-server.c `check_permissions`) and the D-Bus error -> ATT code mapping
// (src/gatt-database.c `dbus_error_to_att_ecode`). Expressed in Swift from reading the C, not copied. The fake
// bluetoothd decides with these; a test can too, to say what a central will get for a flag or an error reply.
import BlueZModel
import GATTModel

/// The ATT side of the fake bluetoothd: pure functions, no bus.
public enum FakeATT {
    /// The link's security level, as `bt_att_get_security` reports it (BT_ATT_SECURITY_*).
    public enum LinkSecurity: Int, Comparable, Sendable {
        /// Unencrypted (BT_ATT_SECURITY_LOW).
        case low = 1
        /// Encrypted with an unauthenticated key (MEDIUM).
        case encrypted = 2
        /// Encrypted with an authenticated (MITM) key (HIGH).
        case authenticated = 3
        /// LE Secure Connections, authenticated (FIPS).
        case secure = 4

        /// Lower security first: `low` < `encrypted` < `authenticated` < `secure`.
        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    /// BT_ATT_PERM_* bits, as far as the fake needs them.
    public struct Permissions: OptionSet, Hashable, Sendable {
        /// The fake's own bits, one per BT_ATT_PERM_* it models: BlueZ's values up to `writeAuthenticated`, but the
        /// secure ones are 0x40 and 0x80 here (0x0100 and 0x0200 in BlueZ).
        public let rawValue: UInt16
        /// Permissions from the fake's bits.
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// BT_ATT_PERM_READ.
        public static let read = Permissions(rawValue: 1 << 0)
        /// BT_ATT_PERM_WRITE.
        public static let write = Permissions(rawValue: 1 << 1)
        /// BT_ATT_PERM_READ_ENCRYPT.
        public static let readEncrypt = Permissions(rawValue: 1 << 2)
        /// BT_ATT_PERM_WRITE_ENCRYPT.
        public static let writeEncrypt = Permissions(rawValue: 1 << 3)
        /// BT_ATT_PERM_READ_AUTHEN.
        public static let readAuthenticated = Permissions(rawValue: 1 << 4)
        /// BT_ATT_PERM_WRITE_AUTHEN.
        public static let writeAuthenticated = Permissions(rawValue: 1 << 5)
        /// BT_ATT_PERM_READ_SECURE.
        public static let readSecure = Permissions(rawValue: 1 << 6)
        /// BT_ATT_PERM_WRITE_SECURE.
        public static let writeSecure = Permissions(rawValue: 1 << 7)
    }

    /// Characteristic property bits (Core Spec Vol 3, Part G, 3.3.1.1).
    public struct Properties: OptionSet, Hashable, Sendable {
        /// The property bits of the characteristic declaration.
        public let rawValue: UInt8
        /// Properties from the declaration's bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Broadcast (0x01).
        public static let broadcast = Properties(rawValue: 0x01)
        /// Read (0x02).
        public static let read = Properties(rawValue: 0x02)
        /// Write Without Response (0x04).
        public static let writeWithoutResponse = Properties(rawValue: 0x04)
        /// Write (0x08).
        public static let write = Properties(rawValue: 0x08)
        /// Notify (0x10).
        public static let notify = Properties(rawValue: 0x10)
        /// Indicate (0x20).
        public static let indicate = Properties(rawValue: 0x20)
        /// Authenticated Signed Writes (0x40).
        public static let authenticatedSignedWrites = Properties(rawValue: 0x40)
        /// Extended Properties (0x80): the characteristic has an Extended Properties descriptor.
        public static let extendedProperties = Properties(rawValue: 0x80)
    }

    /// What one `Flags` array means to bluetoothd.
    public struct ParsedFlags: Hashable, Sendable {
        /// The characteristic declaration's properties.
        public var properties: Properties = []
        /// Extended properties: reliable write 0x01, writable auxiliaries 0x02.
        public var extendedProperties: UInt8 = 0
        /// The value attribute's permissions.
        public var permissions: Permissions = []
        /// The CCCD's write permissions (from `notify`, `indicate` and their security variants).
        public var cccPermissions: Permissions = []
        /// `authorize`: prepared writes from untrusted devices first go to the app with `prepare-authorize`.
        public var requiresPrepareAuthorization = false
    }

    /// `parse_chrc_flags`: nil for any unknown string (the whole registration then fails). Note how 5.66 lets
    /// `encrypt-read` imply `read` and `encrypt-notify` imply `notify`.
    public static func parseCharacteristicFlags(_ strings: [String]) -> ParsedFlags? {
        var parsed = ParsedFlags()
        for string in strings {
            guard let flag = BlueZFlag(rawValue: string) else { return nil }
            switch flag {
            case .broadcast: parsed.properties.insert(.broadcast)
            case .read: parsed.add(.read, [.read])
            case .writeWithoutResponse: parsed.add(.writeWithoutResponse, [.write])
            case .write: parsed.add(.write, [.write])
            case .notify: parsed.addCCC(.notify, [.write])
            case .indicate: parsed.addCCC(.indicate, [.write])
            case .authenticatedSignedWrites: parsed.add(.authenticatedSignedWrites, [.write])
            case .extendedProperties: parsed.properties.insert(.extendedProperties)
            case .reliableWrite:
                parsed.extendedProperties |= 0x01
                parsed.permissions.insert(.write)
            case .writableAuxiliaries: parsed.extendedProperties |= 0x02
            case .encryptRead: parsed.add(.read, [.read, .readEncrypt])
            case .encryptWrite: parsed.add(.write, [.write, .writeEncrypt])
            case .encryptAuthenticatedRead: parsed.add(.read, [.read, .readAuthenticated])
            case .encryptAuthenticatedWrite: parsed.add(.write, [.write, .writeAuthenticated])
            case .secureRead: parsed.add(.read, [.read, .readSecure])
            case .secureWrite: parsed.add(.write, [.write, .writeSecure])
            case .authorize: parsed.requiresPrepareAuthorization = true
            case .encryptNotify: parsed.addCCC(.notify, [.writeEncrypt])
            case .encryptAuthenticatedNotify: parsed.addCCC(.notify, [.writeAuthenticated])
            case .secureNotify: parsed.addCCC(.notify, [.writeSecure])
            case .encryptIndicate: parsed.addCCC(.indicate, [.writeEncrypt])
            case .encryptAuthenticatedIndicate: parsed.addCCC(.indicate, [.writeAuthenticated])
            case .secureIndicate: parsed.addCCC(.indicate, [.writeSecure])
            }
        }
        if parsed.extendedProperties != 0 { parsed.properties.insert(.extendedProperties) }
        return parsed
    }

    /// `parse_desc_flags`: nil for any string outside the descriptor set.
    public static func parseDescriptorFlags(_ strings: [String]) -> ParsedFlags? {
        var parsed = ParsedFlags()
        for string in strings {
            guard let flag = BlueZFlag(rawValue: string), BlueZFlag.descriptorFlags.contains(flag) else { return nil }
            switch flag {
            case .read: parsed.permissions.insert(.read)
            case .write: parsed.permissions.insert(.write)
            case .encryptRead: parsed.permissions.formUnion([.read, .readEncrypt])
            case .encryptWrite: parsed.permissions.formUnion([.write, .writeEncrypt])
            case .encryptAuthenticatedRead: parsed.permissions.formUnion([.read, .readAuthenticated])
            case .encryptAuthenticatedWrite: parsed.permissions.formUnion([.write, .writeAuthenticated])
            case .secureRead: parsed.permissions.formUnion([.read, .readSecure])
            case .secureWrite: parsed.permissions.formUnion([.write, .writeSecure])
            case .authorize: parsed.requiresPrepareAuthorization = true
            default: return nil
            }
        }
        return parsed
    }

    /// The operation a permission check or an error mapping is for.
    public enum Access: Sendable {
        /// A Read or Read Blob Request.
        case read
        /// A write of any kind.
        case write
    }

    /// `check_permissions` in src/shared/gatt-server.c: the static gate bt_att applies before any D-Bus call.
    /// An attribute with no permission bits at all passes (5.66 tests `perm &&` first). Key size is not modelled.
    public static func check(_ permissions: Permissions, for access: Access, at security: LinkSecurity) -> ATTError? {
        guard !permissions.isEmpty else { return nil }
        let (base, secure, authenticated, encrypt): (Permissions, Permissions, Permissions, Permissions) =
            access == .read
            ? (.read, .readSecure, .readAuthenticated, .readEncrypt)
            : (.write, .writeSecure, .writeAuthenticated, .writeEncrypt)
        guard permissions.contains(base) else { return access == .read ? .readNotPermitted : .writeNotPermitted }
        if permissions.contains(secure), security < .secure { return .insufficientAuthentication }
        if permissions.contains(authenticated), security < .authenticated { return .insufficientAuthentication }
        if permissions.contains(encrypt), security < .encrypted { return .insufficientEncryption }
        return nil
    }

    /// `dbus_error_to_att_ecode`: the ATT code a central sees for the app's D-Bus error reply.
    /// `NotPermitted` becomes `permissionError` (0x02 on reads, 0x03 on writes). 5.66 has no case for
    /// `ImproperlyConfigured`, so it falls to 0x0E, unlike an older note of ours (0xFD; 5.76 maps it, docs/bluez.md).
    public static func code(forErrorNamed name: String, message: String, on access: Access) -> ATTError {
        switch name {
        case "org.bluez.Error.Failed":
            // strtol(msg, &end, 0): any trailing text -> 0x80; a number outside 0x80...0x9F (an empty message
            // parses as 0) -> Unlikely Error.
            guard let number = parseLikeStrtol(message) else { return ATTError(rawValue: 0x80) }
            return (0x80...0x9F).contains(number) ? ATTError(rawValue: UInt8(number)) : .unlikelyError
        case "org.bluez.Error.NotSupported": return .requestNotSupported
        case "org.bluez.Error.NotAuthorized": return .insufficientAuthorization
        case "org.bluez.Error.InvalidValueLength": return .invalidAttributeValueLength
        case "org.bluez.Error.InvalidOffset": return .invalidOffset
        case "org.bluez.Error.InProgress": return .procedureAlreadyInProgress
        case "org.bluez.Error.NotPermitted": return access == .read ? .readNotPermitted : .writeNotPermitted
        default: return .unlikelyError
        }
    }

    /// C's `strtol(text, &end, 0)` followed by `*end == '\0'`: the number when the whole text was consumed
    /// (leading spaces, a sign, `0x` hex or `0` octal allowed), nil when text remains after the number.
    /// With no digits at all, strtol consumes nothing: an empty text then yields 0, any other text nil.
    static func parseLikeStrtol(_ text: String) -> Int? {
        var rest = Substring(text).drop { $0 == " " || $0 == "\t" || $0 == "\n" }
        guard !rest.isEmpty else { return text.isEmpty ? 0 : nil }
        var sign = 1
        if let first = rest.first, first == "-" || first == "+" {
            sign = first == "-" ? -1 : 1
            rest = rest.dropFirst()
        }
        var radix = 10
        if rest.hasPrefix("0x") || rest.hasPrefix("0X"), rest.dropFirst(2).first?.isHexDigit == true {
            radix = 16
            rest = rest.dropFirst(2)
        } else if rest.hasPrefix("0") {
            radix = 8
        }
        let digits = rest.prefix { $0.isASCII && Int(String($0), radix: radix) != nil }
        guard !digits.isEmpty, digits.count == rest.count else { return nil }
        // strtol saturates; anything that large is outside 0x80...0x9F anyway.
        return sign * (Int(digits, radix: radix) ?? Int.max)
    }
}

extension FakeATT.ParsedFlags {
    fileprivate mutating func add(_ property: FakeATT.Properties, _ permission: FakeATT.Permissions) {
        properties.insert(property)
        permissions.formUnion(permission)
    }

    fileprivate mutating func addCCC(_ property: FakeATT.Properties, _ permission: FakeATT.Permissions) {
        properties.insert(property)
        cccPermissions.formUnion(permission)
    }
}
