/// Every org.bluez name blemu uses, spelled once (BlueZ 5.66 doc/*-api.txt). No other file spells them.
enum BlueZName {
    /// bluetoothd's well-known bus name.
    static let service = "org.bluez"
    /// The root of bluetoothd's object tree, where its ObjectManager lives.
    static let rootPath = "/"

    /// Interface names.
    enum Interface {
        static let adapter = "org.bluez.Adapter1"
        static let device = "org.bluez.Device1"
        static let gattManager = "org.bluez.GattManager1"
        static let gattService = "org.bluez.GattService1"
        static let gattCharacteristic = "org.bluez.GattCharacteristic1"
        static let gattDescriptor = "org.bluez.GattDescriptor1"
        static let advertisingManager = "org.bluez.LEAdvertisingManager1"
        static let advertisement = "org.bluez.LEAdvertisement1"
        static let agentManager = "org.bluez.AgentManager1"
        static let agent = "org.bluez.Agent1"
    }

    /// Error names an application may answer bluetoothd with (src/gatt-database.c `dbus_error_to_att_ecode`).
    enum Error {
        static let failed = "org.bluez.Error.Failed"
        static let notSupported = "org.bluez.Error.NotSupported"
        static let notAuthorized = "org.bluez.Error.NotAuthorized"
        static let invalidValueLength = "org.bluez.Error.InvalidValueLength"
        static let invalidOffset = "org.bluez.Error.InvalidOffset"
        static let inProgress = "org.bluez.Error.InProgress"
        static let notPermitted = "org.bluez.Error.NotPermitted"
        static let rejected = "org.bluez.Error.Rejected"
        static let canceled = "org.bluez.Error.Canceled"
    }
}
