import BlueZModel
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
    /// The profile asks for extended advertising and this bluetoothd or controller cannot send it, with why and
    /// what to do (the CLI exits 69).
    case extendedAdvertisingUnavailable(String)
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
        case .extendedAdvertisingUnavailable(let why): "extended advertising unavailable: \(why)"
        case .export(let why): "cannot export the object tree: \(why)"
        case .shutDown: "the BlueZ backend is shut down"
        }
    }
}
