import DBus
import GATTModel

/// Why the BlueZ backend could not do what it was asked: errors bluetoothd sent us or conditions we found.
/// (Errors we answer bluetoothd with are `BlueZErrorReply`: a different audience, a different type.)
public enum BlueZError: Error, Hashable, Sendable, CustomStringConvertible {
    /// bluetoothd is not on the bus, the bus cannot be reached, or the adapter is missing (the CLI exits 69).
    case unavailable(String)
    /// bluetoothd answered a registration with an error (e.g. `org.bluez.Error.Failed`), named in the message.
    case rejected(operation: String, DBusError)
    /// The advertisement cannot be laid out as a legacy advertisement (the CLI exits 65).
    case invalidAdvertisement(AdvertisingPlanError)
    /// Our own object tree could not be exported (a bug or an invalid id; never caused by bluetoothd).
    case export(String)
    /// The backend was shut down; nothing more can be published.
    case shutDown

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .unavailable(let why): "BlueZ unavailable: \(why)"
        case .rejected(let operation, let error): "bluetoothd refused \(operation): \(error)"
        case .invalidAdvertisement(let error): "invalid advertisement: \(error)"
        case .export(let why): "cannot export the object tree: \(why)"
        case .shutDown: "the BlueZ backend is shut down"
        }
    }
}

/// How the BlueZ backend presents the machine; all fields have defaults, none can fail.
public struct BlueZOptions: Sendable {
    /// The pairing agent's IO capability and fixed passkey.
    public var pairing: PairingSettings
    /// The adapter `Alias` to set while running (bluetoothd's GAP Device Name), restored on shutdown; nil leaves it.
    public var deviceName: String?
    /// Which `ObjectPaths` instance to export under, so several backends can share a process.
    public var instance: Int
    /// Whether characteristics that notify or indicate offer `AcquireNotify` (exposing `NotifyAcquired`);
    /// false keeps to `StartNotify` + `PropertiesChanged`.
    public var useAcquireNotify: Bool

    /// Options from their parts; the defaults are Just Works pairing, no alias change, instance 0, AcquireNotify on.
    public init(
        pairing: PairingSettings = PairingSettings(), deviceName: String? = nil, instance: Int = 0,
        useAcquireNotify: Bool = true
    ) {
        self.pairing = pairing
        self.deviceName = deviceName
        self.instance = instance
        self.useAcquireNotify = useAcquireNotify
    }
}
