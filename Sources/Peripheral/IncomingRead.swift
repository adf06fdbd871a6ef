import GATTModel

/// A read as the stack received it: the `RequestRouter` turns it into a `ReadRequest`.
@_spi(Backend) public struct IncomingRead: ~Copyable, Sendable {
    /// The central reading, with its current MTU.
    public var central: Central
    /// The id of the characteristic read (the router answers Invalid Handle for an unknown id).
    public var characteristicID: String
    /// BlueZ's `offset` option (0 when absent).
    public var offset: Int
    /// The link's security as the stack knows it (BlueZ: from the `link` option and the device's pairing).
    public var linkSecurity: SecurityLevel
    /// Sends the answer: the bytes from `offset` on, or an ATT error. Consumed by the request's `Responder`.
    public var reply: any RequestReply & ~Copyable
    /// Which ATT errors reach the central as themselves through this stack.
    public var errorDelivery: ErrorDelivery

    /// A read from its parts.
    public init(
        central: Central, characteristicID: String, offset: Int = 0, linkSecurity: SecurityLevel = .none,
        errorDelivery: ErrorDelivery = .exact, reply: consuming any RequestReply & ~Copyable
    ) {
        self.central = central
        self.characteristicID = characteristicID
        self.offset = offset
        self.linkSecurity = linkSecurity
        self.errorDelivery = errorDelivery
        self.reply = reply
    }
}
