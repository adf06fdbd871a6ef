import GATTModel

/// What a stack reports to the manager.
public enum BackendEvent: Sendable {
    /// The adapter's state changed (BlueZ: `Powered`, bluetoothd appearing or vanishing).
    case stateChanged(PeripheralManagerState)
    /// A central connected, or its link changed (a new MTU): the `Central` carries the new limit.
    case connected(Central)
    /// A central disconnected: the manager drops its queue (counted) and ends its subscriptions.
    case disconnected(Central)
    /// A central reads a characteristic.
    case read(IncomingRead)
    /// A central writes one or more characteristics, answered once for all.
    case write(IncomingWrites)
    /// A central subscribed to a characteristic (BlueZ: `AcquireNotify` names the device; `StartNotify` does not,
    /// then use `Central(id: Central.allSubscribersID)`). The stack has already checked the CCCD's security.
    case subscribed(Central, characteristicID: String, kind: UpdateKind)
    /// A central unsubscribed (BlueZ: the notify socket closed, or `StopNotify`).
    case unsubscribed(Central, characteristicID: String)
    /// A central confirmed the indication in flight (BlueZ: byte 0x01 on the socket, or `Confirm()`).
    case confirmed(Central)
    /// The stack can take updates for this central again after `.wouldBlock` (BlueZ: the socket is writable).
    case writable(Central)
    /// The stack stopped advertising on its own and will not resume it (BlueZ: the advertisement could not be
    /// registered again after a power cycle; a `Release()` while the adapter goes away is not this).
    case advertisingStopped(reason: String)
    /// The stack asked the peripheral's side of a pairing something (BlueZ: an `Agent1` call), and its answer.
    case pairing(PairingEvent)
}

/// A read as the stack received it: the manager turns it into a `ReadRequest`.
public struct IncomingRead: Sendable {
    /// The central reading, with its current MTU.
    public var central: Central
    /// The id of the characteristic read (the manager answers Invalid Handle for an unknown id).
    public var characteristicID: String
    /// BlueZ's `offset` option (0 when absent).
    public var offset: Int
    /// The link's security as the stack knows it (BlueZ: from the `link` option and the device's pairing).
    public var linkSecurity: SecurityLevel
    /// Sends the answer: the bytes from `offset` on, or an ATT error. Called exactly once by the manager.
    public var reply: @Sendable (Result<[UInt8], ATTError>) -> Void
    /// Which ATT errors reach the central as themselves through this stack.
    public var errorDelivery: ErrorDelivery

    /// A read from its parts.
    public init(
        central: Central, characteristicID: String, offset: Int = 0, linkSecurity: SecurityLevel = .none,
        errorDelivery: ErrorDelivery = .exact, reply: @escaping @Sendable (Result<[UInt8], ATTError>) -> Void
    ) {
        self.central = central
        self.characteristicID = characteristicID
        self.offset = offset
        self.linkSecurity = linkSecurity
        self.errorDelivery = errorDelivery
        self.reply = reply
    }
}

/// One or more writes as the stack received them, answered once for all.
public struct IncomingWrites: Sendable {
    /// One write: a characteristic id, an offset and the bytes.
    public struct Write: Hashable, Sendable {
        /// The id of the characteristic written (the manager answers Invalid Handle for an unknown id).
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
    /// Sends success (`.success([])`) or an ATT error, exactly once; nil when the stack expects no reply
    /// (a no-reply D-Bus `WriteValue` for write-without-response): then nothing is ever called.
    public var reply: (@Sendable (Result<[UInt8], ATTError>) -> Void)?
    /// Which ATT errors reach the central as themselves through this stack.
    public var errorDelivery: ErrorDelivery

    /// Writes from their parts.
    public init(
        central: Central, writes: [Write], linkSecurity: SecurityLevel = .none, isAuthorizationOnly: Bool = false,
        errorDelivery: ErrorDelivery = .exact, reply: (@Sendable (Result<[UInt8], ATTError>) -> Void)?
    ) {
        self.central = central
        self.writes = writes
        self.linkSecurity = linkSecurity
        self.isAuthorizationOnly = isAuthorizationOnly
        self.errorDelivery = errorDelivery
        self.reply = reply
    }
}
