/// Every org.bluez name the central uses, spelled once (STYLE.md: one table per interface).
///
/// This is deliberately not the `BlueZ` module: that module is the *peripheral* backend (GattManager1,
/// LEAdvertisingManager1, objects bluetoothd calls into). The central is bluetoothd's *client* API (Adapter1,
/// Device1 and the remote GATT objects under a device, doc/adapter-api.txt, device-api.txt, gatt-api.txt at 5.66),
/// where blemu calls bluetoothd instead; keeping the two apart keeps either from growing the other's assumptions.
enum BlueZClient {
    /// bluetoothd's well-known bus name.
    static let service = "org.bluez"
    /// The error-name prefix of every error bluetoothd answers with (src/error.c).
    static let errorPrefix = "org.bluez.Error."

    /// The freedesktop interfaces bluetoothd implements on its objects.
    enum Standard {
        static let objectManager = "org.freedesktop.DBus.ObjectManager"
        static let properties = "org.freedesktop.DBus.Properties"
        static let getManagedObjects = "GetManagedObjects"
        static let interfacesAdded = "InterfacesAdded"
        static let interfacesRemoved = "InterfacesRemoved"
        static let propertiesChanged = "PropertiesChanged"
        static let get = "Get"
        static let set = "Set"
    }

    /// `org.bluez.Adapter1` (doc/adapter-api.txt).
    enum Adapter {
        static let interface = "org.bluez.Adapter1"
        static let setDiscoveryFilter = "SetDiscoveryFilter"
        static let startDiscovery = "StartDiscovery"
        static let stopDiscovery = "StopDiscovery"
        static let powered = "Powered"
        static let address = "Address"
        /// The discovery filter key and the value that limits discovery to LE.
        static let transport = "Transport"
        static let transportLE = "le"
    }

    /// `org.bluez.LEAdvertisingManager1` on the adapter: only read, to skip adapters that are advertising.
    enum AdvertisingManager {
        static let interface = "org.bluez.LEAdvertisingManager1"
        static let activeInstances = "ActiveInstances"
    }

    /// `org.bluez.Device1` (doc/device-api.txt).
    enum Device {
        static let interface = "org.bluez.Device1"
        static let connect = "Connect"
        static let disconnect = "Disconnect"
        static let adapter = "Adapter"
        static let address = "Address"
        static let addressType = "AddressType"
        static let name = "Name"
        static let alias = "Alias"
        static let rssi = "RSSI"
        static let uuids = "UUIDs"
        static let connected = "Connected"
        static let servicesResolved = "ServicesResolved"
    }

    /// `org.bluez.GattService1`, client side (doc/gatt-api.txt).
    enum Service {
        static let interface = "org.bluez.GattService1"
        static let uuid = "UUID"
        static let primary = "Primary"
        static let device = "Device"
    }

    /// `org.bluez.GattCharacteristic1`, client side.
    enum Characteristic {
        static let interface = "org.bluez.GattCharacteristic1"
        static let uuid = "UUID"
        static let service = "Service"
        static let flags = "Flags"
        static let value = "Value"
        static let readValue = "ReadValue"
        static let startNotify = "StartNotify"
        static let stopNotify = "StopNotify"
    }

    /// `org.bluez.GattDescriptor1`, client side. bluetoothd 5.66 exposes no `Flags` on remote descriptors
    /// (src/gatt-client.c descriptor_properties), so every descriptor is read.
    enum Descriptor {
        static let interface = "org.bluez.GattDescriptor1"
        static let uuid = "UUID"
        static let characteristic = "Characteristic"
    }

    /// Characteristic flag strings the probe acts on; the rest are only reported.
    enum Flag {
        /// Any flag ending in this suffix allows a read (`read`, `encrypt-read`, `secure-read`...).
        static let readSuffix = "read"
        static let notify = "notify"
        static let indicate = "indicate"
    }

    /// Error names from src/error.c that the probe treats specially.
    enum ErrorName {
        static let alreadyConnected = "org.bluez.Error.AlreadyConnected"
        static let inProgress = "org.bluez.Error.InProgress"
        static let notPermitted = "org.bluez.Error.NotPermitted"
        static let notAuthorized = "org.bluez.Error.NotAuthorized"
        static let notSupported = "org.bluez.Error.NotSupported"
        static let invalidArguments = "org.bluez.Error.InvalidArguments"
        static let failed = "org.bluez.Error.Failed"
    }
}
