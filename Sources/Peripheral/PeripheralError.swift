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
    /// The stack refused the operation: its own error, typed (e.g. `BlueZError`), inside.
    case backendFailed(BackendFailure)

    /// A sentence for logs and users.
    public var description: String {
        switch self {
        case .notPoweredOn(let state): "the peripheral is \(state.rawValue), not poweredOn"
        case .unavailable(let state): "Bluetooth is \(state.rawValue)"
        case .alreadyPublished(let id): "service \(id) is already published; remove it before publishing again"
        case .duplicateCharacteristicID(let id): "characteristic id \(id) is already published"
        case .notPublished(let id): "service \(id) is not published"
        case .backendFailed(let failure): "the Bluetooth stack failed: \(failure)"
        }
    }
}

/// The error a stack threw, kept whole so callers can match its type (`failure.error as? BlueZError`). Two failures
/// are equal when they say the same thing: errors in general are not `Hashable`.
public struct BackendFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stack's own error.
    public let error: any Error

    /// Wraps the stack's error.
    public init(_ error: any Error) { self.error = error }

    /// The stack's own description of it.
    public var description: String { "\(error)" }

    /// Equal when the descriptions are.
    public static func == (lhs: BackendFailure, rhs: BackendFailure) -> Bool { lhs.description == rhs.description }

    /// Hashes the description.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}
