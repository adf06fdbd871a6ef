import GATTModel

/// One write `blemu verify --writes` makes after listening: planned from the profile (`WritePlan`), carried out by
/// `BlueZCentral`, and checked by `ProfileVerifier`. A planned write the central must not make (it would pair by
/// itself, or its answer could not be told) is planned with its outcome already `.notMade`, and never sent.
public struct ProbeWrite: Codable, Sendable, Equatable {
    /// What a write checks.
    public enum Purpose: Codable, Sendable, Equatable {
        /// A value the profile allows: the device must accept it.
        case accepts
        /// A value that only one of the characteristic's write-rule checks refuses (`check`: "allowed", "length",
        /// "range"): the device must answer with the rule's ATT `error`.
        case refuses(check: String, error: UInt8)
        /// The value read before the writes, written back so the device is left as it was found.
        case restores
        /// The value read before the writes, written on a link that is not paired although the profile guards the
        /// characteristic's writes: the device must refuse it for want of pairing. Writing what it already holds
        /// leaves a device that takes it (the defect) as it was.
        case guarded
        /// A request the profile's protocol declares an answer to (`DeclaredExchange`): the device must answer it as
        /// the case `answeredBy` does, refused with `error` or accepted, then send exactly `expects`.
        case exchange(answeredBy: String, error: UInt8?)
    }

    /// A value sent to the central on a characteristic, as an exchange expects it or as it arrived.
    public struct Update: Codable, Sendable, Equatable {
        /// The profile's id of the characteristic.
        public var characteristic: String
        /// The characteristic's object path on the central's bluetoothd.
        public var path: String
        /// The bytes, as uppercase hex with no spaces.
        public var hex: String

        /// An update from its parts.
        public init(characteristic: String, path: String, bytes: [UInt8]) {
            self.characteristic = characteristic
            self.path = path
            hex = Hex.string(bytes, separator: "")
        }
    }

    /// What became of a write.
    public enum Outcome: Codable, Sendable, Equatable {
        /// The device accepted it (a Write Command has no answer: sent is all a central can tell).
        case accepted
        /// The device, or bluetoothd on the way, refused it.
        case refused(ProbeFailure)
        /// It was not sent, for this reason.
        case notMade(String)
    }

    /// The profile's id of the characteristic written.
    public var characteristic: String
    /// The characteristic's object path on the central's bluetoothd.
    public var path: String
    /// What the write checks.
    public var purpose: Purpose
    /// The bytes written, as uppercase hex with no spaces.
    public var hex: String
    /// A Write Request (answered), else a Write Command.
    public var withResponse: Bool
    /// What a read right after an accepted write must return (uppercase hex); nil when it is not read back.
    public var readsBack: String?
    /// What became of it; nil in a plan not carried out yet.
    public var outcome: Outcome?
    /// The read after the write, made when `readsBack` asks for one and the write was accepted.
    public var readBack: ProbeRead?
    /// For a `guarded` write that was made: the pairing state around it.
    public var pairing: ProbePairingAround?
    /// For an `exchange`: how the protocol reads the request (`set-target-power`, `malformed`).
    public var reading: String?
    /// For an `exchange`: the values that must arrive after the answer, in order within each characteristic.
    public var expects: [Update]?
    /// For an `exchange`: the characteristics (paths) listened to around it, each subscribed before the first.
    public var listens: [String]?
    /// For an `exchange`: how long the case waits between its values (`wait`), so the central listens that longer.
    public var waitMilliseconds: Int?
    /// For an `exchange` that was made: what arrived on `listens` from the write until the values settled.
    public var heard: [Update]?

    /// A planned write; `skipped` plans it as not made, for that reason.
    public init(
        characteristic: String, path: String, purpose: Purpose, bytes: [UInt8], withResponse: Bool,
        readsBack: [UInt8]? = nil, skipped: String? = nil
    ) {
        self.characteristic = characteristic
        self.path = path
        self.purpose = purpose
        hex = Hex.string(bytes, separator: "")
        self.withResponse = withResponse
        self.readsBack = readsBack.map { Hex.string($0, separator: "") }
        outcome = skipped.map(Outcome.notMade)
    }

    /// The bytes written.
    public var bytes: [UInt8] { Hex.bytes(hex) ?? [] }

    /// Whether this write is a protocol's exchange.
    public var isExchange: Bool { if case .exchange = purpose { true } else { false } }
}
