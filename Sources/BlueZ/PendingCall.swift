import DBus
import Synchronization

/// A held `MethodCall` that an escaping `@Sendable` closure may answer: the first `take()` gets it, every later
/// one gets nil, so the call is answered at most once; if nobody takes it, the box's deinit drops it and
/// `MethodCall`'s own deinit answers `Failed` (logged by the DBus module).
final class PendingCall: Sendable {
    private let call: Mutex<MethodCall?>

    /// Holds `call` until someone takes it.
    init(_ call: consuming MethodCall) { self.call = Mutex(Optional(call)) }

    /// The call, the first time; nil afterwards.
    func take() -> MethodCall? { call.withLock { $0.take() } }

    /// Answers with values, once; later calls do nothing and return false.
    @discardableResult
    func reply(_ values: [DBusValue] = []) -> Bool {
        guard let call = take() else { return false }
        call.reply(values)
        return true
    }

    /// Answers with a D-Bus error, once; later calls do nothing and return false.
    @discardableResult
    func fail(_ name: String, _ text: String) -> Bool {
        guard let call = take() else { return false }
        call.fail(name, text)
        return true
    }
}
