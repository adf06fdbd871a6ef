/// A remote device connected to the peripheral: Core Bluetooth's `CBCentral`.
///
/// Two values with the same `id` are the same central, even when the link's MTU changed between them.
public struct Central: Hashable, Sendable, Identifiable, CustomStringConvertible {
    /// The stack's name for the device, e.g. the BlueZ device path `/org/bluez/hci0/dev_00_11_22_33_44_55`.
    public let id: String
    /// The longest notification or indication payload the link carries (ATT_MTU - 3, at most
    /// `maximumAttributeValueLength`); longer updates are cut.
    public var maximumUpdateValueLength: Int

    /// The default ATT_MTU of an LE link (Core Spec Vol 3, Part F, 3.2.8): what a central has before an MTU exchange.
    public static let defaultATTMTU = 23

    /// A central from its id and payload limit; a limit below 1 is raised to 1 so that no update is cut to nothing.
    public init(id: String, maximumUpdateValueLength: Int = Central.defaultATTMTU - 3) {
        self.id = id
        self.maximumUpdateValueLength = max(1, maximumUpdateValueLength)
    }

    /// The longest attribute value (Core Spec Vol 3, Part F, 3.2.9). It also bounds what reaches a central through
    /// bluetoothd 5.66's notify socket: `sock_io_read` (src/gatt-database.c) reads datagrams into a 512-byte buffer
    /// and silently drops the rest, which the lab saw cut 514-byte chunks of a transfer at MTU 517.
    public static let maximumAttributeValueLength = 512

    /// A central from its id and negotiated ATT_MTU: a Handle Value Notification spends 3 bytes on its header, and
    /// no value exceeds `maximumAttributeValueLength` whatever the MTU.
    public init(id: String, attMTU: Int) {
        self.init(id: id, maximumUpdateValueLength: min(attMTU - 3, Central.maximumAttributeValueLength))
    }

    /// Centrals are equal when their ids are: the MTU is a property of the link at one moment.
    public static func == (lhs: Central, rhs: Central) -> Bool { lhs.id == rhs.id }

    /// Hashes the id only, matching `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The id.
    public var description: String { id }
}
