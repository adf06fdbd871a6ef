import GATTModel

/// Every org.bluez name blemu uses, spelled once (BlueZ 5.66 doc/*-api.txt). No other file spells them.
enum BlueZName {
    /// bluetoothd's well-known bus name.
    static let service = "org.bluez"
    /// The root of bluetoothd's object tree, where its ObjectManager lives.
    static let rootPath = "/"
    /// Where `AgentManager1` lives.
    static let agentManagerPath = "/org/bluez"

    /// The freedesktop interfaces bluetoothd's objects are read and watched through.
    enum FreeDesktop {
        static let properties = "org.freedesktop.DBus.Properties"
        static let objectManager = "org.freedesktop.DBus.ObjectManager"
    }

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
        /// What a caller other than bluetoothd gets (the D-Bus standard name, spelled here for the BlueZ module).
        static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    }

    /// Method names bluetoothd answers (doc/gatt-api.txt, advertising-api.txt, agent-api.txt, adapter-api.txt).
    enum Member {
        static let registerApplication = "RegisterApplication"
        static let unregisterApplication = "UnregisterApplication"
        static let registerAdvertisement = "RegisterAdvertisement"
        static let unregisterAdvertisement = "UnregisterAdvertisement"
        static let registerAgent = "RegisterAgent"
        static let requestDefaultAgent = "RequestDefaultAgent"
        static let unregisterAgent = "UnregisterAgent"
    }

    /// Property names of bluetoothd's and our objects.
    enum Property {
        static let powered = "Powered"
        static let connected = "Connected"
        static let alias = "Alias"
        static let uuid = "UUID"
        static let primary = "Primary"
        static let includes = "Includes"
        static let characteristics = "Characteristics"
        static let service = "Service"
        static let characteristic = "Characteristic"
        static let flags = "Flags"
        static let descriptors = "Descriptors"
        static let notifying = "Notifying"
        static let notifyAcquired = "NotifyAcquired"
        static let value = "Value"
        static let type = "Type"
        static let serviceUUIDs = "ServiceUUIDs"
        static let localName = "LocalName"
        static let appearance = "Appearance"
        static let manufacturerData = "ManufacturerData"
        static let serviceData = "ServiceData"
        static let discoverable = "Discoverable"
        static let minInterval = "MinInterval"
        static let maxInterval = "MaxInterval"
    }

    /// Keys of the `a{sv}` options bluetoothd passes to ReadValue, WriteValue and AcquireNotify
    /// (5.66:src/gatt-database.c `append_options`).
    enum Option {
        static let device = "device"
        static let mtu = "mtu"
        static let offset = "offset"
        static let link = "link"
        static let prepareAuthorize = "prepare-authorize"
    }

    /// Values of LEAdvertisement1 properties (5.66:src/advertising.c `parse_type`, `parse_includes`).
    enum AdvertisementValue {
        static let peripheral = "peripheral"
        static let broadcast = "broadcast"
        static let txPower = "tx-power"
    }

    /// The `capability` strings of `AgentManager1.RegisterAgent` (5.66:doc/agent-api.txt), next to the profile's names.
    static func capability(_ capability: IOCapability) -> String {
        switch capability {
        case .displayOnly: "DisplayOnly"
        case .displayYesNo: "DisplayYesNo"
        case .keyboardOnly: "KeyboardOnly"
        case .noInputNoOutput: "NoInputNoOutput"
        case .keyboardDisplay: "KeyboardDisplay"
        }
    }
}
