import GATTModel

/// How a device behaves at run time, as a profile declares it. The Emulation module runs it; this is data only.
public struct Behaviour: Hashable, Sendable {
    /// Values that change on a schedule, and whether the change is pushed to subscribers.
    public var schedules: [Schedule]
    /// What happens when a central writes a characteristic.
    public var writeRules: [WriteRule]
    /// Deliberate misbehaviour for testing centrals.
    public var faults: [Fault]
    /// The device's own state: named, typed variables with their initial values.
    public var state: [StateVariable]
    /// How the device answers writes to its control points, request by request.
    public var protocols: [DeviceProtocol]
    /// Records the device has stored, which protocols send, count and delete.
    public var records: [RecordStore]

    /// Behaviour from its parts; none by default (values are served as declared).
    public init(
        schedules: [Schedule] = [], writeRules: [WriteRule] = [], faults: [Fault] = [], state: [StateVariable] = [],
        protocols: [DeviceProtocol] = [], records: [RecordStore] = []
    ) {
        self.schedules = schedules
        self.writeRules = writeRules
        self.faults = faults
        self.state = state
        self.protocols = protocols
        self.records = records
    }

    /// Whether the profile declares no behaviour at all.
    public var isEmpty: Bool {
        schedules.isEmpty && writeRules.isEmpty && faults.isEmpty && state.isEmpty && protocols.isEmpty
            && records.isEmpty
    }
}

extension Schedule {
    /// The end marker a transfer sends last, as Apple's BTLE Transfer sample does.
    public static let endOfMessage: [UInt8] = Array("EOM".utf8)

    /// The text a `transfer` streams: the pieces of `generators` joined, when they are one whole-value sequence of
    /// text or bytes that does not repeat and ends with `EOM` (which is not part of the text); nil otherwise. The
    /// decoder refuses a transfer of another shape, and the emulator streams this.
    public static func transferText(of generators: [FieldGenerator]) -> [UInt8]? {
        guard generators.count == 1, generators[0].field == nil,
            case .sequence(let values, repeats: false) = generators[0].generator
        else { return nil }
        let pieces = values.compactMap { value -> [UInt8]? in
            switch value {
            case .text(let text): Array(text.utf8)
            case .bytes(let bytes): bytes
            default: nil
            }
        }
        guard pieces.count == values.count, pieces.last == endOfMessage else { return nil }
        return pieces.dropLast().flatMap { $0 }
    }
}

/// A periodic change of one characteristic's value.
public struct Schedule: Hashable, Sendable {
    /// What each tick does with the new value.
    public enum Action: String, Hashable, Sendable, CaseIterable {
        /// Store it and notify subscribers.
        case notify
        /// Store it and indicate it to subscribers.
        case indicate
        /// Store it only; centrals see it when they read.
        case update
        /// Stream the value's text to each subscriber as Apple's BTLE Transfer sample does: the pieces of a
        /// non-repeating `sequence` ending in `EOM` are joined, cut to each central's maximum update length and
        /// sent as fast as the queue takes them (retrying on "ready to update subscribers"), then `EOM`. No
        /// interval: the pace is the link's.
        case transfer
    }

    /// When the schedule starts ticking.
    public enum Start: String, Hashable, Sendable, CaseIterable {
        /// As soon as the device runs.
        case launch
        /// When the first central subscribes; it pauses while nobody is subscribed.
        case firstSubscription = "first-subscription"
    }

    /// The characteristic whose value changes.
    public var characteristicID: String
    /// What a tick does.
    public var action: Action
    /// The time between ticks; zero for a `transfer`, which goes at the link's pace, and for a schedule paced by
    /// its recording (`isRecordedPace`).
    public var interval: Duration
    /// When ticking starts.
    public var start: Start
    /// The generators that compute the new value: one for the whole value, or one per typed field.
    public var generators: [FieldGenerator]

    /// A schedule from its parts.
    public init(
        characteristicID: String, action: Action, interval: Duration, start: Start, generators: [FieldGenerator]
    ) {
        self.characteristicID = characteristicID
        self.action = action
        self.interval = interval
        self.start = start
        self.generators = generators
    }

    /// Whether the schedule sends each row of a whole-value `replay` at the row's recorded time instead of ticking
    /// at an interval (a schedule with a whole-value replay and no `interval`).
    public var isRecordedPace: Bool {
        action != .transfer && interval == .zero && generators.count == 1 && generators[0].field == nil
            && generators[0].generator.isReplay
    }
}

/// A generator bound to a typed field of the value, or to the whole value when `field` is nil.
public struct FieldGenerator: Hashable, Sendable {
    /// The name of the field in the characteristic's layout; nil for the whole value.
    public var field: String?
    /// What produces successive values.
    public var generator: Generator

    /// A binding from its parts.
    public init(field: String?, generator: Generator) {
        self.field = field
        self.generator = generator
    }
}

/// A source of successive values.
public enum Generator: Hashable, Sendable {
    /// Always the same value.
    case constant(FieldValue)
    /// The values in order; cycled when `repeats`, else the last one stays.
    case sequence([FieldValue], repeats: Bool)
    /// From `start`, adding `step` each tick within `range`; wraps to the other bound or stops there.
    case counter(start: Double, step: Double, range: ClosedRange<Double>, wraps: Bool)
    /// A random walk from `start` by at most `step` per tick within `range`; the same seed gives the same walk.
    case randomWalk(start: Double, step: Double, range: ClosedRange<Double>, seed: UInt64)
    /// `offset + amplitude * sin(2 pi t / period)`.
    case sine(period: Duration, amplitude: Double, offset: Double)
    /// Values replayed from a CSV file of `time,value` rows (time in seconds).
    case replay(Replay)
    /// A number that moves toward a state variable's value at most `ratePerSecond` per second (a trainer's power
    /// following its target in ERG mode), from `start` (nil: the variable's initial value).
    case follow(state: String, ratePerSecond: Double, start: Double?)

    /// Whether this is a `replay`.
    public var isReplay: Bool { if case .replay = self { true } else { false } }
}

/// A `replay` generator's source: which CSV file, which column, and how its values read.
public struct Replay: Hashable, Sendable {
    /// How the value column is spelled.
    public enum Format: String, Hashable, Sendable, CaseIterable {
        /// A number per row, for a numeric field (or a value that is one field).
        case number
        /// Hex bytes per row ("0648"), the whole value: what `blemu clone --record` writes.
        case hex
    }

    /// The CSV file, relative to the profile's directory unless absolute.
    public var file: String
    /// The value column's name in the header; nil for the second column.
    public var column: String?
    /// How the values are spelled.
    public var format: Format
    /// Whether a recording sent at its own times plays again after its last row (`Schedule.isRecordedPace`).
    public var repeats: Bool

    /// A replay from its parts; numbers from the second column, no repeating, by default.
    public init(file: String, column: String? = nil, format: Format = .number, repeats: Bool = false) {
        self.file = file
        self.column = column
        self.format = format
        self.repeats = repeats
    }
}

/// What happens when a central writes one characteristic: the actions in order, stopping at the first rejection.
public struct WriteRule: Hashable, Sendable {
    /// The characteristic written.
    public var characteristicID: String
    /// The actions, in order.
    public var actions: [WriteAction]

    /// A rule from its parts.
    public init(characteristicID: String, actions: [WriteAction]) {
        self.characteristicID = characteristicID
        self.actions = actions
    }
}

/// One step of handling a write.
public enum WriteAction: Hashable, Sendable {
    /// Store the written value.
    case store
    /// Reject the write with `error` unless it passes `check`.
    case validate(WriteCheck, error: ATTError)
    /// Set another characteristic (or one of its fields) to the written value, optionally moving toward it over time.
    case set(characteristicID: String, field: String?, ratePerSecond: Double?)
    /// Notify or indicate a fixed reply on a characteristic (a control point's response).
    case reply(characteristicID: String, value: [UInt8])
    /// Notify the written value back on the same characteristic.
    case echo
}

/// A condition a written value must meet.
public enum WriteCheck: Hashable, Sendable {
    /// The value's length is in the range.
    case length(ClosedRange<Int>)
    /// The value is one of these.
    case allowedValues([[UInt8]])
    /// The value, read as the characteristic's first typed field (or a little-endian unsigned integer), is in range.
    case range(ClosedRange<Double>)
}

/// A deliberate fault: when it triggers and what it does.
public struct Fault: Hashable, Sendable {
    /// When a fault fires.
    public enum Trigger: Hashable, Sendable {
        /// On the nth request (1-based) of an operation, on one characteristic or any.
        case request(AttributeOperation, characteristicID: String?, nth: Int)
        /// Once, this long after the device starts.
        case after(Duration)
    }

    /// What a fault does.
    public enum Effect: Hashable, Sendable {
        /// Answer the request with this error.
        case reject(ATTError)
        /// Answer the request after this delay.
        case delay(Duration)
        /// Stop advertising.
        case stopAdvertising
        /// Disconnect every central.
        case disconnect
    }

    /// When it fires.
    public var trigger: Trigger
    /// What it does.
    public var effect: Effect

    /// A fault from its parts.
    public init(trigger: Trigger, effect: Effect) {
        self.trigger = trigger
        self.effect = effect
    }
}
