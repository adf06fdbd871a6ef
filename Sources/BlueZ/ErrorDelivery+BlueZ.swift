import BlueZModel
import GATTModel
@_spi(Backend) import Peripheral

extension ErrorDelivery {
    /// Through bluetoothd's `dbus_error_to_att_ecode` (src/gatt-database.c): codes it has no spelling for arrive as
    /// 0x0E (`ATTError.deliveredThroughBlueZ`).
    public static let throughBlueZ = ErrorDelivery { error, operation in
        error.deliveredThroughBlueZ(on: operation)
    }
}
