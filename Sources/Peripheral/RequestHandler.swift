/// Application code that answers requests: Core Bluetooth's `didReceiveRead` and `didReceiveWrite`.
///
/// Each request is the handler's to answer once; forgetting to answer costs the central an Unlikely Error (and a
/// log line), answering after the manager's deadline returns `.refused`. Calls run concurrently.
///
/// A request first goes to `answerAtOnce`, on the thread it arrived on (BlueZ: the D-Bus loop thread): a handler
/// that can decide without waiting answers there, at the cost of a function call, and returns nil. A request it
/// hands back goes to `handleRead`/`handleWrites`, which start on the same thread and run there until they first
/// suspend; the rest runs on the cooperative pool. Never block in either (no blocking I/O, no locks held for
/// long): await instead.
public protocol RequestHandler: Sendable {
    /// Answers a read, with the characteristic's whole value (the request slices the offset) or an ATT error.
    func handleRead(_ request: consuming ReadRequest) async
    /// Answers a batch of writes, once for all; validate the whole batch before applying any of it.
    func handleWrites(_ requests: consuming WriteRequests) async
    /// Answers a read without waiting and returns nil, or returns it unanswered for `handleRead`. The default
    /// returns every read: implement it when most reads need no `await`, since a request answered here costs no
    /// task (Benchmarks/README.md, "Answering without a task").
    func answerAtOnce(_ request: consuming ReadRequest) -> ReadRequest?
    /// Answers a batch of writes without waiting and returns nil, or returns it unanswered for `handleWrites`. The
    /// default returns every batch.
    func answerAtOnce(_ requests: consuming WriteRequests) -> WriteRequests?
}

extension RequestHandler {
    /// Hands every read to `handleRead`.
    public func answerAtOnce(_ request: consuming ReadRequest) -> ReadRequest? { request }
    /// Hands every batch to `handleWrites`.
    public func answerAtOnce(_ requests: consuming WriteRequests) -> WriteRequests? { requests }
}
