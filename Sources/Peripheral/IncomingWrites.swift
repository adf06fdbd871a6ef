import GATTModel

/// One or more writes as the stack received them, answered once for all.
@_spi(Backend) public struct IncomingWrites: ~Copyable, Sendable {
    /// One write: a characteristic id, an offset and the bytes.
    public struct Write: Hashable, Sendable {
        /// The id of the characteristic written (the router answers Invalid Handle for an unknown id).
        public var characteristicID: String
        /// BlueZ's `offset` option (0 when absent).
        public var offset: Int
        /// The bytes.
        public var value: [UInt8]

        /// A write from its parts.
        public init(characteristicID: String, offset: Int = 0, value: [UInt8]) {
            self.characteristicID = characteristicID
            self.offset = offset
            self.value = value
        }
    }

    /// The central writing, with its current MTU.
    public var central: Central
    /// The writes, in order (BlueZ sends one per `WriteValue`; the in-memory backend batches reliable writes).
    public var writes: [Write]
    /// The link's security as the stack knows it.
    public var linkSecurity: SecurityLevel
    /// BlueZ's `prepare-authorize`: only ask whether the writes would be accepted, apply nothing.
    public var isAuthorizationOnly: Bool
    /// Sends success (`.success([])`) or an ATT error, consumed by the request's `Responder`; nil when the stack
    /// expects no reply (a no-reply D-Bus `WriteValue` for write-without-response): then nothing is ever sent.
    public var reply: (any RequestReply & ~Copyable)?
    /// Which ATT errors reach the central as themselves through this stack.
    public var errorDelivery: ErrorDelivery

    /// Writes from their parts.
    public init(
        central: Central, writes: [Write], linkSecurity: SecurityLevel = .none, isAuthorizationOnly: Bool = false,
        errorDelivery: ErrorDelivery = .exact, reply: consuming (any RequestReply & ~Copyable)?
    ) {
        self.central = central
        self.writes = writes
        self.linkSecurity = linkSecurity
        self.isAuthorizationOnly = isAuthorizationOnly
        self.errorDelivery = errorDelivery
        self.reply = reply
    }
}
