import BlueZModel

/// Recovers the ATT error code from the D-Bus error bluetoothd's GATT client answered with.
///
/// src/gatt-client.c (5.66) `create_gatt_dbus_error`: Read/Write Not Permitted become `NotPermitted` with a message
/// naming them; Insufficient Authentication, Encryption and Key Size all become `NotPermitted "Not paired"` (so the
/// code is lost); Invalid Offset and Invalid Attribute Value Length become `InvalidArguments`; Insufficient
/// Authorization `NotAuthorized`; Request Not Supported `NotSupported`; any other code `Failed` with the message
/// "Operation failed with ATT error: 0x%02x".
enum ATTErrorCode {
    /// The ATT code for an error reply, nil when the reply does not identify one.
    static func parse(name: String, message: String) -> UInt8? {
        switch name {
        case BlueZName.Error.notPermitted:
            if message == "Read not permitted" { return 0x02 }
            if message == "Write not permitted" { return 0x03 }
            return nil
        case BlueZName.Error.invalidArguments:
            if message == "Invalid offset" { return 0x07 }
            if message == "Invalid Length" { return 0x0D }
            return nil
        case BlueZName.Error.notAuthorized: return 0x08
        case BlueZName.Error.notSupported: return 0x06
        case BlueZName.Error.failed:
            guard let range = message.firstRange(of: "ATT error: 0x") else { return nil }
            return UInt8(message[range.upperBound...].prefix(2), radix: 16)
        default:
            return nil
        }
    }
}
