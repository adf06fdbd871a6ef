import GATTModel

/// How the stack answers one request. The request's `Responder` holds it until the first answer, takes it out
/// then, sends once and drops it, so a reply that owns something answerable once (BlueZ's `MethodCall`) needs no
/// lock of its own.
///
/// `send` is `mutating`, not `consuming`: Swift 6.3 leaks the box of a noncopyable existential whose value was
/// moved and then consumed through a `consuming` requirement (about 80 bytes a request, measured with a standalone
/// program and under massif), where a `mutating` call followed by the value's end frees it. A reply gives up what it
/// owns in `send` (`MethodCallReply` takes its call out of an optional).
@_spi(Backend) public protocol RequestReply: ~Copyable, Sendable {
    /// Sends the answer: a read's bytes from its offset, `[]` for a write, or an ATT error. Called once.
    mutating func send(_ result: Result<[UInt8], ATTError>)
}

/// A reply that calls a closure, for stacks whose answer owns nothing (the in-memory backend, tests).
@_spi(Backend) public struct ClosureReply: RequestReply {
    private let body: @Sendable (Result<[UInt8], ATTError>) -> Void

    /// A reply that hands the answer to `body`.
    public init(_ body: @escaping @Sendable (Result<[UInt8], ATTError>) -> Void) { self.body = body }

    /// Calls the closure with the answer.
    public mutating func send(_ result: Result<[UInt8], ATTError>) { body(result) }
}
