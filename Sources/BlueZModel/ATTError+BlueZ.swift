import GATTModel

extension ATTError {
    /// What a central receives when an application answers a request with this error through bluetoothd.
    ///
    /// `dbus_error_to_att_ecode` (src/gatt-database.c, 5.66 to 5.82) is the only way an application chooses the
    /// ATT error: 0x80-0x9F travel as `org.bluez.Error.Failed` with the code as the message; Request Not Supported,
    /// Insufficient Authorization, Invalid Attribute Value Length, Invalid Offset and Procedure Already In Progress
    /// have names of their own; `NotPermitted` is Read Not Permitted on a read and Write Not Permitted on a write.
    /// Every other code (0xFF Out Of Range, 0x13 Value Not Allowed, ...) reaches the central as 0x0E Unlikely Error.
    /// (From 5.76 `ImproperlyConfigured` carries 0xFD; blemu does not send it yet, so 0xFD is 0x0E here too.)
    public func deliveredThroughBlueZ(on operation: AttributeOperation) -> ATTError {
        switch self {
        case _ where isApplicationError: self
        case .requestNotSupported, .insufficientAuthorization, .invalidAttributeValueLength, .invalidOffset,
            .procedureAlreadyInProgress:
            self
        case .readNotPermitted where operation == .read: self
        case .writeNotPermitted where operation != .read: self
        default: .unlikelyError
        }
    }
}
