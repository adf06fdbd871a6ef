import GATTModel

/// How a stack carries an ATT error to the central: some stacks cannot send every code, and what the central
/// receives is what the event log must record (docs/control-and-events.md, `request`). A backend supplies its own
/// (BlueZ's is `ErrorDelivery.throughBlueZ`, in the BlueZ module): this layer knows no stack.
public struct ErrorDelivery: Sendable {
    private let deliver: @Sendable (ATTError, AttributeOperation) -> ATTError

    /// A delivery that turns the error the application answers to a request of an operation into the one the
    /// central receives.
    public init(_ deliver: @escaping @Sendable (_ error: ATTError, _ operation: AttributeOperation) -> ATTError) {
        self.deliver = deliver
    }

    /// Every code reaches the central as itself (the in-memory backend, a stack of our own).
    public static let exact = ErrorDelivery { error, _ in error }

    /// The error the central receives when the application answers `error` to a request of `operation`.
    public func delivered(_ error: ATTError, on operation: AttributeOperation) -> ATTError {
        deliver(error, operation)
    }
}
