import BlueZModel
import DBus
import Logging
import Synchronization

/// Admits method calls only from the connection that owns `org.bluez` now: anyone on the system bus could
/// otherwise call ReadValue or the agent's RequestPasskey and see or change what centrals see.
package final class OwnerCheck: Sendable {
    private let owner: Mutex<String?>
    private let logger: Logger

    /// A check that admits `owner` (nil admits nobody, while bluetoothd is away).
    package init(owner: String?, logger: Logger) {
        self.owner = Mutex(owner)
        self.logger = logger
    }

    /// The unique name of bluetoothd now, or nil.
    package var current: String? { owner.withLock { $0 } }

    /// Records a new owner (from `NameOwnerChanged`); returns the previous one.
    @discardableResult
    package func update(_ newOwner: String?) -> String? {
        owner.withLock { owner in
            let previous = owner
            owner = newOwner
            return previous
        }
    }

    /// The call back if its sender owns `org.bluez`; otherwise answers `AccessDenied`, logs it and returns nil.
    package func admit(_ call: consuming MethodCall) -> MethodCall? {
        let sender = call.sender
        let expected = current
        if let sender, sender == expected { return call }
        logger.warning(
            "refused \(call.member) on \(call.path) from \(sender ?? "(no sender)"): only bluetoothd (\(expected ?? "absent")) may call it"
        )
        call.fail(BlueZName.Error.accessDenied, "only the owner of \(BlueZName.service) may call this object")
        return nil
    }
}
