import GATTModel

/// One write in a batch: a value for a characteristic at an offset.
public struct WriteRequest: Hashable, Sendable {
    /// The characteristic written.
    public let characteristic: Characteristic
    /// Where the bytes go in the value (prepared writes); 0 for a plain write.
    public let offset: Int
    /// The bytes written.
    public let value: [UInt8]

    /// A write from its parts.
    public init(characteristic: Characteristic, offset: Int, value: [UInt8]) {
        self.characteristic = characteristic
        self.offset = offset
        self.value = value
    }

    /// The value after this write: `current[..<offset] + value`. Fails with Invalid Offset (0x07) when the offset
    /// is past the end of `current`, and Invalid Attribute Value Length (0x0D) when the result would be longer than
    /// the characteristic's `maximumLength` (Core Spec Vol 3, Part F, 3.4.5.1 and 3.4.6.1).
    public func applied(to current: [UInt8]) -> Result<[UInt8], ATTError> {
        Self.applied(value, at: offset, maximumLength: characteristic.maximumLength, to: current)
    }

    /// `applied(to:)` from the write's parts, for a caller that reads them where the write lies.
    static func applied(
        _ value: [UInt8], at offset: Int, maximumLength: Int, to current: [UInt8]
    ) -> Result<[UInt8], ATTError> {
        guard offset >= 0, offset <= current.count else { return .failure(.invalidOffset) }
        guard offset + value.count <= maximumLength else { return .failure(.invalidAttributeValueLength) }
        // A plain write (offset 0) is the value itself: no copy.
        return .success(offset == 0 ? value : Array(current[..<offset]) + value)
    }
}

/// A batch of writes from one central, answered once for the whole batch: Core Bluetooth's `didReceiveWrite`
/// array, where `respond(to: requests.first!, withResult:)` answers all of them.
///
/// Answer exactly once with `respond()` or `reject(_:)` (both consume it). Dropped unanswered, it answers Unlikely
/// Error itself (logged); after the deadline a late answer returns `.refused` (logged). Validate the whole batch
/// before applying any of it: `validated(current:)` does that.
///
/// How far "all or nothing" goes depends on the stack. The in-memory backend's `writeReliably` hands over a real
/// batch of several writes. BlueZ 5.66 never does (src/shared/gatt-server.c `prep_write_cb`/`exec_write_cb`,
/// checked in the lab by Tests/LabTests/ATTScenario.swift); each `WriteValue` is a batch of one:
/// - a long write (Prepare Write parts of one characteristic at contiguous offsets) is merged by bluetoothd and
///   arrives at Execute Write as **one** write of the whole value, so rejecting it stores nothing and the central
///   gets the error in its Execute Write Response: atomic;
/// - a reliable write of several characteristics is refused whole with Request Not Supported (0x06) unless every
///   one has the `reliable-write` property; with it, bluetoothd sends one write per characteristic, in order,
///   waiting for each answer, and stops at the first error: the characteristics before it **stay written**. Nothing
///   tells the application which write is the last, so no handler can make such a batch atomic;
/// - parts ending within 4 bytes of 512 never arrive: 5.66 counts the Prepare Write header as value and refuses
///   them with 0x0D (fixed in BlueZ 5.69 by 8bf3a4a26).
public struct WriteRequests: ~Copyable, Sendable {
    /// The central writing.
    public let central: Central
    /// The writes, in the order the central sent them.
    public let requests: [WriteRequest]
    /// The security of the central's link as the stack reports it.
    public let linkSecurity: SecurityLevel
    /// False for a write without response: the answer is still required (and counted) but nothing is sent, so an
    /// error never reaches the central (docs/bluez.md, "Writes": bluetoothd acknowledges those writes itself).
    public let expectsResponse: Bool
    /// True when the stack only asks whether the batch may start (BlueZ's `prepare-authorize`): answer and apply
    /// nothing; the real write follows at Execute Write. BlueZ 5.66 asks only for characteristics with the
    /// `authorize` flag (blemu sets none), once per characteristic and batch from an untrusted central, and with no
    /// bytes: `value` is empty and only `offset` is the part's, so there is nothing to validate but the offset
    /// (`authorizationError`).
    public let isAuthorizationOnly: Bool
    /// Which ATT errors reach the central as themselves: `reject(_:)`'s error may arrive as another.
    public let errorDelivery: ErrorDelivery
    private let responder: Responder

    /// A batch answered through `responder`.
    package init(
        central: Central, requests: [WriteRequest], linkSecurity: SecurityLevel, expectsResponse: Bool,
        isAuthorizationOnly: Bool, errorDelivery: ErrorDelivery = .exact, responder: Responder
    ) {
        self.central = central
        self.requests = requests
        self.linkSecurity = linkSecurity
        self.expectsResponse = expectsResponse
        self.isAuthorizationOnly = isAuthorizationOnly
        self.errorDelivery = errorDelivery
        self.responder = responder
    }

    /// The value each written characteristic would have after the whole batch, applied in order to `current`
    /// (keyed by characteristic id; `current` is asked only for a write at an offset); the first failing write's
    /// error (Invalid Offset, Invalid Attribute Value Length) otherwise, and then nothing should be applied.
    public func validated(current: (Characteristic) -> [UInt8]) -> Result<[String: [UInt8]], ATTError> {
        var staged: [String: [UInt8]] = [:]
        for request in requests {
            let id = request.characteristic.id
            // A write at offset 0 replaces the whole value: the current one is not read (a lock and a hash).
            let before = request.offset == 0 ? [] : staged[id] ?? current(request.characteristic)
            switch request.applied(to: before) {
            case .success(let value): staged[id] = value
            case .failure(let error): return .failure(error)
            }
        }
        return .success(staged)
    }

    /// The error an authorization-only batch earns from its offsets alone: Invalid Offset (0x07) for an offset past
    /// the characteristic's `maximumLength`; nil when the writes may go ahead.
    public var authorizationError: ATTError? {
        requests.lazy.compactMap { $0.offset > $0.characteristic.maximumLength ? ATTError.invalidOffset : nil }.first
    }

    /// Answers success for the whole batch. Returns `.refused` if the deadline already answered.
    @discardableResult
    public consuming func respond() -> AnswerDelivery {
        responder.answer(.success([]), by: .handler)
    }

    /// Answers an ATT error for the whole batch. Returns `.refused` if the deadline already answered.
    @discardableResult
    public consuming func reject(_ error: ATTError) -> AnswerDelivery {
        responder.answer(.failure(error), by: .handler)
    }

    deinit {
        // Runs after respond/reject too (they consume self); the responder ignores it then.
        responder.answer(.failure(.unlikelyError), by: .dropped)
    }
}
