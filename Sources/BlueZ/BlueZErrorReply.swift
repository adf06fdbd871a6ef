import BlueZModel
import GATTModel

/// The D-Bus error an application answers bluetoothd with so that a central sees a given ATT error.
///
/// The mirror of `dbus_error_to_att_ecode()` in BlueZ 5.66 src/gatt-database.c, which is the only way an
/// application chooses the ATT error: 0x80-0x9F travel as `Failed` with the code as the message; six codes have
/// their own error names; every other code is unreachable and the central sees 0x0E Unlikely Error.
/// (5.66 has no mapping for `ImproperlyConfigured`: 0xFD also arrives as 0x0E.)
public struct BlueZErrorReply: Hashable, Sendable {
    /// The D-Bus error name.
    public let name: String
    /// The error message; for `Failed` it carries the application code, e.g. `0x80`.
    public let message: String
    /// The ATT error the central will really see.
    public let deliveredError: ATTError

    /// The reply that comes closest to `error` for a request of `operation` (read or write).
    public init(for error: ATTError, operation: AttributeOperation) {
        // Which codes get through is BlueZModel's fact (`deliveredThroughBlueZ`), which the validator warns from;
        // this spells each one.
        guard error.deliveredThroughBlueZ(on: operation) == error else {
            // Any name bluetoothd does not know maps to 0x0E; ours says why in bluetoothd's log. (`Failed` would
            // not do: a non-numeric message makes it 0x80.)
            self.init(Self.undeliverable, "\(error) cannot be sent through bluetoothd", .unlikelyError)
            return
        }
        switch error {
        case .unlikelyError:
            // Asked for: bluetoothd's answer to a name it does not know.
            self.init(Self.undeliverable, "Unlikely Error", error)
        case _ where error.isApplicationError:
            let hex = String(error.rawValue, radix: 16)
            self.init(BlueZName.Error.failed, "0x\(hex)", error)
        case .requestNotSupported:
            self.init(BlueZName.Error.notSupported, "Request Not Supported", error)
        case .insufficientAuthorization:
            self.init(BlueZName.Error.notAuthorized, "Insufficient Authorization", error)
        case .invalidAttributeValueLength:
            self.init(BlueZName.Error.invalidValueLength, "Invalid Attribute Value Length", error)
        case .invalidOffset:
            self.init(BlueZName.Error.invalidOffset, "Invalid Offset", error)
        case .procedureAlreadyInProgress:
            self.init(BlueZName.Error.inProgress, "Procedure Already In Progress", error)
        case .readNotPermitted, .writeNotPermitted:
            // On its own operation (checked above): NotPermitted becomes the one that fits.
            self.init(BlueZName.Error.notPermitted, error.name, error)
        default:
            // `deliveredThroughBlueZ` has a code this switch does not spell: the central gets 0x0E, said so.
            self.init(Self.undeliverable, "\(error) cannot be sent through bluetoothd", .unlikelyError)
        }
    }

    /// The error name blemu answers with when the ATT error it wants has no BlueZ spelling.
    static let undeliverable = "org.blemu.Error.Undeliverable"

    private init(_ name: String, _ message: String, _ delivered: ATTError) {
        self.name = name
        self.message = message
        self.deliveredError = delivered
    }

    /// Whether a central can be made to see exactly `error` through bluetoothd.
    public static func canDeliver(_ error: ATTError, operation: AttributeOperation) -> Bool {
        BlueZErrorReply(for: error, operation: operation).deliveredError == error
    }
}
