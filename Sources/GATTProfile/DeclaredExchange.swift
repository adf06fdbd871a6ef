import GATTModel

/// One request a profile's protocol declares an answer to, and that answer: what `blemu verify --writes` writes to a
/// device's control point and what must come back (docs/verify.md, "Protocols"). Plain data: the protocol engine
/// works it out, the probe carries it out, the verifier judges what came back against it.
public struct DeclaredExchange: Hashable, Sendable {
    /// A value the central must receive after the write is answered.
    public struct Update: Hashable, Sendable {
        /// The characteristic it arrives on.
        public var characteristicID: String
        /// Its bytes.
        public var value: [UInt8]

        /// An update from its parts.
        public init(characteristicID: String, value: [UInt8]) {
            self.characteristicID = characteristicID
            self.value = value
        }
    }

    /// The characteristic written (the control point).
    public var characteristicID: String
    /// The request written: a Write Request, or a Command where the characteristic has only write-without-response.
    public var request: [UInt8]
    /// How the protocol reads the request (`set-target-power`, `unknown 0xFF`, `malformed`).
    public var reading: String
    /// Which case answers it, in words (`case 2: op is request-control`, `otherwise`, `none`).
    public var answeredBy: String
    /// The ATT error the write must be refused with; nil when it must be accepted.
    public var rejection: ATTError?
    /// What arrives after the Write Response, in the order sent (bluetoothd keeps it within one characteristic).
    public var updates: [Update]
    /// How long the case waits between its updates (`wait`): the central listens this much longer.
    public var waits: Duration

    /// An exchange from its parts.
    public init(
        characteristicID: String, request: [UInt8], reading: String, answeredBy: String, rejection: ATTError?,
        updates: [Update], waits: Duration = .zero
    ) {
        self.characteristicID = characteristicID
        self.request = request
        self.reading = reading
        self.answeredBy = answeredBy
        self.rejection = rejection
        self.updates = updates
        self.waits = waits
    }
}

/// The exchanges that exercise a profile's protocols, in the order to make them, and the cases no exchange reaches.
public struct ExchangePlan: Hashable, Sendable {
    /// How many requests a run toward one case may take, the last one included.
    public static let searchDepth = 3

    /// A case no sequence of requests reaches from the state the profile starts in.
    public struct Unreached: Hashable, Sendable {
        /// The protocol's characteristic.
        public var characteristicID: String
        /// The case, in words.
        public var answeredBy: String

        /// An unreached case from its parts.
        public init(characteristicID: String, answeredBy: String) {
            self.characteristicID = characteristicID
            self.answeredBy = answeredBy
        }
    }

    /// The exchanges, in order: each starts from the state the ones before it left.
    public var exchanges: [DeclaredExchange]
    /// The cases none of them reaches.
    public var unreached: [Unreached]

    /// A plan from its parts.
    public init(exchanges: [DeclaredExchange], unreached: [Unreached]) {
        self.exchanges = exchanges
        self.unreached = unreached
    }
}
