/// Application code that answers requests: Core Bluetooth's `didReceiveRead` and `didReceiveWrite`.
///
/// Each call gets a request it owns and must answer once; forgetting to answer costs the central an Unlikely
/// Error (and a log line), answering after the manager's deadline returns `.refused`. Calls run concurrently.
public protocol RequestHandler: Sendable {
    /// Answers a read, with the characteristic's whole value (the request slices the offset) or an ATT error.
    func handleRead(_ request: consuming ReadRequest) async
    /// Answers a batch of writes, once for all; validate the whole batch before applying any of it.
    func handleWrites(_ requests: consuming WriteRequests) async
}
