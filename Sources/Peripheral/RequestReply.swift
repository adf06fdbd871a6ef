import GATTModel

/// How the stack answers one request. The request's `Responder` holds it until the first answer and consumes it
/// then, so a reply that owns something answerable once (BlueZ's `MethodCall`) needs no guard of its own.
@_spi(Backend) public protocol RequestReply: ~Copyable, Sendable {
    /// Sends the answer: a read's bytes from its offset, `[]` for a write, or an ATT error.
    consuming func send(_ result: Result<[UInt8], ATTError>)
}

/// A reply that calls a closure, for stacks whose answer owns nothing (the in-memory backend, tests).
@_spi(Backend) public struct ClosureReply: RequestReply {
    private let body: @Sendable (Result<[UInt8], ATTError>) -> Void

    /// A reply that hands the answer to `body`.
    public init(_ body: @escaping @Sendable (Result<[UInt8], ATTError>) -> Void) { self.body = body }

    /// Calls the closure with the answer.
    public consuming func send(_ result: Result<[UInt8], ATTError>) { body(result) }
}
