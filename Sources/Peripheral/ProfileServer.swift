import GATTModel
import Logging

/// The default request handler: serves published characteristics from a `ValueStore` with the checks a real
/// device makes, so a profile runs without code. Answers:
/// - reads with the current value (cached or dynamic), writes by storing them (a batch all or nothing);
/// - Read Not Permitted (0x02) / Write Not Permitted (0x03) when the permissions (or a cached value) forbid it;
/// - Insufficient Encryption (0x0F) when the link is not encrypted and the operation requires it, Insufficient
///   Authentication (0x05) when it requires authenticated pairing (Core Spec Vol 3, Part C, 10.3.1);
/// - Invalid Offset (0x07) and Invalid Attribute Value Length (0x0D) from the offset and `maximumLength`.
public struct ProfileServer: RequestHandler {
    /// Where current values live; share it with code that changes values (Emulation).
    public let store: ValueStore
    private let logger: Logger

    /// A server over `store`, logging each refusal at debug level.
    public init(store: ValueStore = ValueStore(), logger: Logger = Logger(label: "blemu.peripheral.server")) {
        self.store = store
        self.logger = logger
    }

    /// Answers with the stored value, or the error the permissions and link security call for.
    public func handleRead(_ request: consuming ReadRequest) async { answer(request) }

    /// Answers the read here: serving from the store never waits.
    public func answerAtOnce(_ request: consuming ReadRequest) -> ReadRequest? {
        answer(request)
        return nil
    }

    /// Answers the batch here: storing never waits.
    public func answerAtOnce(_ requests: consuming WriteRequests) -> WriteRequests? {
        answer(requests)
        return nil
    }

    /// Answers with the stored value, or the error the permissions and link security call for.
    public func answer(_ request: consuming ReadRequest) {
        if let error = Self.error(for: .read, on: request.characteristic, linkSecurity: request.linkSecurity) {
            logger.debug("read of \(request.characteristic.id) by \(request.central) refused: \(error)")
            request.reject(error)
        } else {
            request.respond(with: store.value(of: request.characteristic))
        }
    }

    /// Stores the whole batch, or nothing and the first error.
    public func handleWrites(_ requests: consuming WriteRequests) async { answer(requests) }

    /// Stores the whole batch, or nothing and the first error.
    public func answer(_ requests: consuming WriteRequests) {
        // Compute one answer, send it once at the end.
        if let failure = apply(requests) {
            logger.debug("writes by \(requests.central) refused: \(failure)")
            requests.reject(failure)
        } else {
            requests.respond()
        }
    }

    /// Checks the batch (permissions, link security, then offsets and lengths) and stores it all or nothing, as
    /// `answer` does before answering; returns the error to answer with, nil once stored. An authorization-only
    /// batch is judged by its offsets and stores nothing.
    public func apply(_ requests: borrowing WriteRequests) -> ATTError? {
        if let refusal = Self.refusal(of: requests) { return refusal }
        return requests.isAuthorizationOnly ? requests.authorizationError : store.apply(requests.requests)
    }

    /// The error the first write of the batch gets from its characteristic's permissions or the link's security
    /// (`error(for:on:linkSecurity:)`), or nil when every write may go ahead.
    public static func refusal(of requests: borrowing WriteRequests) -> ATTError? {
        let writes = requests.requests
        let linkSecurity = requests.linkSecurity
        for index in writes.indices {
            if let error = error(for: .write, on: writes[index].characteristic, linkSecurity: linkSecurity) {
                return error
            }
        }
        return nil
    }

    /// The error a read or write of `characteristic` gets on a link with `linkSecurity`, or nil when allowed.
    public static func error(
        for operation: AttributeOperation, on characteristic: Characteristic, linkSecurity: SecurityLevel
    ) -> ATTError? {
        switch operation {
        case .read where !characteristic.permissions.allowsRead: return .readNotPermitted
        case .write where !characteristic.permissions.allowsWrite || characteristic.value.isCached:
            return .writeNotPermitted
        default: break
        }
        return securityError(required: characteristic.effectiveSecurity[operation], linkSecurity: linkSecurity)
    }

    /// The error for a link below the required level: 0x0F when encryption is missing, 0x05 when authentication is.
    public static func securityError(required: SecurityLevel, linkSecurity: SecurityLevel) -> ATTError? {
        guard linkSecurity < required else { return nil }
        return required == .encrypted ? .insufficientEncryption : .insufficientAuthentication
    }
}

extension ProfileServer {
    /// What became of `setValue(_:for:notifying:)`.
    public enum ValueChange: Hashable, Sendable {
        /// Stored, and queued for every subscriber (or there are none).
        case queued
        /// Stored, but a subscriber's queue is full: call again after `.readyToUpdateSubscribers`.
        case queueFull
        /// Not stored: the characteristic is cached (constant) or the value is longer than 512 bytes.
        case refused
    }

    /// Stores a value and sends it to the characteristic's subscribers: what Emulation does when a value changes.
    /// Can fail with `.queueFull` (stored, not sent: retry on ready) or `.refused` (nothing done).
    public func setValue(
        _ value: [UInt8], for characteristic: Characteristic, notifying manager: PeripheralManager
    ) async -> ValueChange {
        guard store.setValue(value, for: characteristic) else { return .refused }
        return await manager.updateValue(value, for: characteristic) ? .queued : .queueFull
    }
}
