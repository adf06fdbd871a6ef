import GATTModel

/// Every org.bluez name blemu uses, spelled once (BlueZ 5.66 doc/*-api.txt), for both sides of bluetoothd's API:
/// the peripheral backend (module BlueZ: objects bluetoothd calls into, GattManager1, LEAdvertisingManager1,
/// AgentManager1) and the central (module ProbeCentral: Adapter1, Device1 and the remote GATT objects it calls).
/// No other file spells them.
package enum BlueZName {
    /// bluetoothd's well-known bus name.
    package static let service = "org.bluez"
    /// The root of bluetoothd's object tree, where its ObjectManager lives.
    package static let rootPath = "/"
    /// Where `AgentManager1` lives.
    package static let agentManagerPath = "/org/bluez"
    /// The error-name prefix of every error bluetoothd answers with (src/error.c).
    package static let errorPrefix = "org.bluez.Error."

    /// The freedesktop interfaces bluetoothd's objects are read and watched through, and their members.
    package enum FreeDesktop {
        package static let properties = "org.freedesktop.DBus.Properties"
        package static let objectManager = "org.freedesktop.DBus.ObjectManager"
        package static let getManagedObjects = "GetManagedObjects"
        package static let interfacesAdded = "InterfacesAdded"
        package static let interfacesRemoved = "InterfacesRemoved"
        package static let propertiesChanged = "PropertiesChanged"
        package static let get = "Get"
        package static let getAll = "GetAll"
        package static let set = "Set"
    }

    /// Interface names.
    package enum Interface {
        package static let adapter = "org.bluez.Adapter1"
        package static let device = "org.bluez.Device1"
        package static let gattManager = "org.bluez.GattManager1"
        package static let gattService = "org.bluez.GattService1"
        package static let gattCharacteristic = "org.bluez.GattCharacteristic1"
        package static let gattDescriptor = "org.bluez.GattDescriptor1"
        package static let advertisingManager = "org.bluez.LEAdvertisingManager1"
        package static let advertisement = "org.bluez.LEAdvertisement1"
        package static let agentManager = "org.bluez.AgentManager1"
        package static let agent = "org.bluez.Agent1"
    }

    /// Error names an application may answer bluetoothd with (src/gatt-database.c `dbus_error_to_att_ecode`).
    package enum Error {
        package static let failed = "org.bluez.Error.Failed"
        package static let notSupported = "org.bluez.Error.NotSupported"
        package static let notAuthorized = "org.bluez.Error.NotAuthorized"
        package static let invalidValueLength = "org.bluez.Error.InvalidValueLength"
        package static let invalidOffset = "org.bluez.Error.InvalidOffset"
        package static let inProgress = "org.bluez.Error.InProgress"
        package static let notPermitted = "org.bluez.Error.NotPermitted"
        package static let rejected = "org.bluez.Error.Rejected"
        package static let canceled = "org.bluez.Error.Canceled"
        package static let alreadyConnected = "org.bluez.Error.AlreadyConnected"
        package static let alreadyExists = "org.bluez.Error.AlreadyExists"
        package static let invalidArguments = "org.bluez.Error.InvalidArguments"
        /// What a caller other than bluetoothd gets (the D-Bus standard name, spelled here for the BlueZ module).
        package static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    }

    /// Method names bluetoothd answers (doc/gatt-api.txt, advertising-api.txt, agent-api.txt, adapter-api.txt).
    package enum Member {
        package static let registerApplication = "RegisterApplication"
        package static let unregisterApplication = "UnregisterApplication"
        package static let registerAdvertisement = "RegisterAdvertisement"
        package static let unregisterAdvertisement = "UnregisterAdvertisement"
        package static let registerAgent = "RegisterAgent"
        package static let requestDefaultAgent = "RequestDefaultAgent"
        package static let unregisterAgent = "UnregisterAgent"
        package static let disconnect = "Disconnect"
        package static let connect = "Connect"
        package static let pair = "Pair"
        package static let setDiscoveryFilter = "SetDiscoveryFilter"
        package static let startDiscovery = "StartDiscovery"
        package static let stopDiscovery = "StopDiscovery"
        package static let readValue = "ReadValue"
        package static let writeValue = "WriteValue"
        package static let startNotify = "StartNotify"
        package static let stopNotify = "StopNotify"
    }

    /// Signals bluetoothd sends besides the standard ones.
    package enum Signal {
        /// `Device1.Disconnected(reason, message)`, just before `Connected` turns false (5.83 and later,
        /// src/device.c `device_disconnected`).
        package static let disconnected = "Disconnected"
    }

    /// Property names of bluetoothd's and our objects.
    package enum Property {
        package static let powered = "Powered"
        package static let connected = "Connected"
        package static let paired = "Paired"
        package static let alias = "Alias"
        package static let uuid = "UUID"
        package static let primary = "Primary"
        package static let includes = "Includes"
        package static let characteristics = "Characteristics"
        package static let service = "Service"
        package static let characteristic = "Characteristic"
        package static let flags = "Flags"
        package static let descriptors = "Descriptors"
        package static let notifying = "Notifying"
        package static let notifyAcquired = "NotifyAcquired"
        package static let writeAcquired = "WriteAcquired"
        package static let value = "Value"
        package static let type = "Type"
        package static let serviceUUIDs = "ServiceUUIDs"
        package static let localName = "LocalName"
        package static let appearance = "Appearance"
        package static let manufacturerData = "ManufacturerData"
        package static let serviceData = "ServiceData"
        package static let discoverable = "Discoverable"
        package static let minInterval = "MinInterval"
        package static let maxInterval = "MaxInterval"
        package static let address = "Address"
        package static let addressType = "AddressType"
        package static let name = "Name"
        package static let rssi = "RSSI"
        package static let uuids = "UUIDs"
        package static let servicesResolved = "ServicesResolved"
        package static let adapter = "Adapter"
        package static let device = "Device"
        package static let activeInstances = "ActiveInstances"
        package static let txPower = "TxPower"
        package static let secondaryChannel = "SecondaryChannel"
        package static let supportedSecondaryChannels = "SupportedSecondaryChannels"
        package static let supportedCapabilities = "SupportedCapabilities"
        package static let maxAdvLen = "MaxAdvLen"
    }

    /// `Adapter1.SetDiscoveryFilter`'s key and the value that limits discovery to LE (doc/adapter-api.txt).
    package enum DiscoveryFilter {
        package static let transport = "Transport"
        package static let transportLE = "le"
    }

    /// Keys of the `a{sv}` options bluetoothd passes to ReadValue, WriteValue and AcquireNotify
    /// (5.66:src/gatt-database.c `append_options`).
    package enum Option {
        package static let device = "device"
        package static let mtu = "mtu"
        package static let offset = "offset"
        package static let link = "link"
        package static let prepareAuthorize = "prepare-authorize"
    }

    /// A client's `WriteValue` option that chooses the ATT procedure, and its values (5.66:src/gatt-client.c
    /// `characteristic_write_value`: "request" is a Write Request, or a long write past the MTU; "command" a Write
    /// Command; with no type bluetoothd picks by the characteristic's properties, a reliable write first).
    package enum WriteType {
        package static let option = "type"
        package static let request = "request"
        package static let command = "command"
    }

    /// Values of LEAdvertisement1 properties (5.66:src/advertising.c `parse_type`, `parse_includes`).
    package enum AdvertisementValue {
        package static let peripheral = "peripheral"
        package static let broadcast = "broadcast"
        package static let txPower = "tx-power"
    }

    /// The `capability` strings of `AgentManager1.RegisterAgent` (5.66:doc/agent-api.txt), next to the profile's names.
    package static func capability(_ capability: IOCapability) -> String {
        switch capability {
        case .displayOnly: "DisplayOnly"
        case .displayYesNo: "DisplayYesNo"
        case .keyboardOnly: "KeyboardOnly"
        case .noInputNoOutput: "NoInputNoOutput"
        case .keyboardDisplay: "KeyboardDisplay"
        }
    }
}
