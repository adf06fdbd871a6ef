import ControlProtocol
import Synchronization

/// The requests being answered, by id, and whether the client cancelled each: a cancelled request's answer is not
/// sent (MCP 2025-06-18, "Cancellation": the receiver should not respond to it). Holds only calls in flight.
final class CallTable: Sendable {
    private let calls = Mutex<[JSONValue: Bool]>([:])

    /// Records that request `id` is being answered.
    func begin(_ id: JSONValue) { calls.withLock { $0[id] = false } }

    /// Marks request `id` cancelled, if it is still in flight (a late cancellation concerns nothing).
    func cancel(_ id: JSONValue) { calls.withLock { if $0[id] != nil { $0[id] = true } } }

    /// Whether request `id` is in flight and not cancelled: what it sends meanwhile (progress) is still wanted.
    func isWanted(_ id: JSONValue) -> Bool { calls.withLock { $0[id] == false } }

    /// Ends request `id`; true when its answer is to be sent (it was not cancelled).
    func end(_ id: JSONValue) -> Bool { calls.withLock { $0.removeValue(forKey: id) } == false }
}
