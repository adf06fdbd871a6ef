import GATTModel

/// A central's request to read a characteristic's value: Core Bluetooth's `CBATTRequest` for a read.
///
/// Answer it exactly once with `respond(with:)` or `reject(_:)`: both consume it, so a second answer does not
/// compile. Dropped unanswered, it answers Unlikely Error itself (logged); after the manager's deadline the engine
/// has answered already and a late answer returns `.refused` (logged).
public struct ReadRequest: ~Copyable, Sendable {
    /// The central reading.
    public let central: Central
    /// The characteristic read.
    public let characteristic: Characteristic
    /// Where the central wants the value to start (Read Blob, Core Spec Vol 3, Part F, 3.4.4.5); 0 for a plain read.
    public let offset: Int
    /// The security of the central's link as the stack reports it.
    public let linkSecurity: SecurityLevel
    /// Which ATT errors reach the central as themselves: `reject(_:)`'s error may arrive as another.
    public let errorDelivery: ErrorDelivery
    private let responder: Responder

    /// A request answered through `responder`.
    package init(
        central: Central, characteristic: Characteristic, offset: Int, linkSecurity: SecurityLevel,
        errorDelivery: ErrorDelivery = .exact, responder: Responder
    ) {
        self.central = central
        self.characteristic = characteristic
        self.offset = offset
        self.linkSecurity = linkSecurity
        self.errorDelivery = errorDelivery
        self.responder = responder
    }

    /// Answers with the characteristic's **whole** value: the request sends `value[offset...]`, or Invalid Offset
    /// (0x07) when the offset is past the end. Returns `.refused` if the deadline already answered.
    @discardableResult
    public consuming func respond(with value: [UInt8]) -> AnswerDelivery {
        guard offset <= value.count else { return responder.answer(.failure(.invalidOffset), by: .handler) }
        return responder.answer(.success(Array(value[offset...])), by: .handler)
    }

    /// Answers with an ATT error. Returns `.refused` if the deadline already answered.
    @discardableResult
    public consuming func reject(_ error: ATTError) -> AnswerDelivery {
        responder.answer(.failure(error), by: .handler)
    }

    deinit {
        // Runs after respond/reject too (they consume self); the responder ignores it then.
        responder.answer(.failure(.unlikelyError), by: .dropped)
    }
}
