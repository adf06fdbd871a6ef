/// Application code that answers requests: Core Bluetooth's `didReceiveRead` and `didReceiveWrite`.
///
/// Each call gets a request it owns and must answer once; forgetting to answer costs the central an Unlikely
/// Error (and a log line), answering after the manager's deadline returns `.refused`. Calls run concurrently.
///
/// Each call starts on the thread the request arrived on (BlueZ: the D-Bus loop thread) and runs there until it
/// first suspends, so a handler that answers without waiting answers at the cost of a function call. Never block
/// in it (no blocking I/O, no locks held for long): await instead, and the rest runs on the cooperative pool.
public protocol RequestHandler: Sendable {
    /// Answers a read, with the characteristic's whole value (the request slices the offset) or an ATT error.
    func handleRead(_ request: consuming ReadRequest) async
    /// Answers a batch of writes, once for all; validate the whole batch before applying any of it.
    func handleWrites(_ requests: consuming WriteRequests) async
}
