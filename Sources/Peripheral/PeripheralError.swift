import GATTModel

/// Misuse of the manager, or a stack that refused: the errors `PeripheralManager` throws (never sent to centrals).
public enum PeripheralError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The manager is not powered on; Core Bluetooth also requires `.poweredOn` before publishing or advertising.
    case notPoweredOn(PeripheralManagerState)
    /// The stack cannot be used at all: unsupported or unauthorized.
    case unavailable(PeripheralManagerState)
    /// A service with this id is already published: published services are immutable, remove it first.
    case alreadyPublished(serviceID: String)
    /// A characteristic id is used twice among the published services.
    case duplicateCharacteristicID(String)
    /// No published service has this id.
    case notPublished(serviceID: String)
    /// The stack refused the operation, with its own message.
    case backendFailed(String)

    /// A sentence for logs and users.
    public var description: String {
        switch self {
        case .notPoweredOn(let state): "the peripheral is \(state.rawValue), not poweredOn"
        case .unavailable(let state): "Bluetooth is \(state.rawValue)"
        case .alreadyPublished(let id): "service \(id) is already published; remove it before publishing again"
        case .duplicateCharacteristicID(let id): "characteristic id \(id) is already published"
        case .notPublished(let id): "service \(id) is not published"
        case .backendFailed(let message): "the Bluetooth stack failed: \(message)"
        }
    }
}
