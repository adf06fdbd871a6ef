import BlueZModel
import GATTModel

/// How a stack carries an ATT error to the central: some stacks cannot send every code, and what the central
/// receives is what the event log must record (docs/control-and-events.md, `request`).
public enum ErrorDelivery: Hashable, Sendable {
    /// Every code reaches the central as itself (the in-memory backend, a stack of our own).
    case exact
    /// Through bluetoothd's `dbus_error_to_att_ecode`: codes it has no spelling for arrive as 0x0E
    /// (`ATTError.deliveredThroughBlueZ`).
    case throughBlueZ

    /// The error the central receives when the application answers `error` to a request of `operation`.
    public func delivered(_ error: ATTError, on operation: AttributeOperation) -> ATTError {
        switch self {
        case .exact: error
        case .throughBlueZ: error.deliveredThroughBlueZ(on: operation)
        }
    }
}
