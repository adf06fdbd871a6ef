import GATTModel

/// A named, typed variable of the device's own state (a trainer's `control` granted, its `target-power`), declared
/// in `behaviour.state` with its starting value: set by protocol actions, tested by their cases, read by replies and
/// by the `follow` generator. `reset` puts every variable back to its initial value.
public struct StateVariable: Hashable, Sendable {
    /// The variable's name; one namespace with the fields of the requests that may read it.
    public var name: String
    /// Its type, spelled as a field's (`bool`, `u8`, `s16`, `utf8`, ...).
    public var type: FieldType
    /// The value it starts with, and returns to at `reset`.
    public var initial: FieldValue

    /// A variable from its parts.
    public init(name: String, type: FieldType, initial: FieldValue) {
        self.name = name
        self.type = type
        self.initial = initial
    }
}

/// How a device answers writes to one characteristic as a request/response protocol (a control point): the written
/// value read by `request` (an op code, then that op code's own parameter fields), then the first `case` whose
/// conditions hold acts, or `otherwise`; with neither, the write is refused with `Self.defaultRejection`.
public struct DeviceProtocol: Hashable, Sendable {
    /// The Core's code for a request the server does not support (Core 5.4 Vol 3 Part F 3.4.1.1), and one bluetoothd
    /// carries to the central as itself (docs/bluez.md, "Errors an application can send").
    public static let defaultRejection = ATTError.requestNotSupported

    /// The characteristic written.
    public var characteristicID: String
    /// How a written value reads.
    public var request: RequestLayout
    /// The cases, in order: the first that holds acts.
    public var cases: [ProtocolCase]
    /// What a request no case holds for gets; nil: `defaultRejection`.
    public var otherwise: [ProtocolAction]?

    /// A protocol from its parts.
    public init(
        characteristicID: String, request: RequestLayout, cases: [ProtocolCase], otherwise: [ProtocolAction]? = nil
    ) {
        self.characteristicID = characteristicID
        self.request = request
        self.cases = cases
        self.otherwise = otherwise
    }
}

extension DeviceProtocol {
    /// The characteristics the protocol's actions send to, set a field of, or control the schedules of: the values
    /// a request to it may change besides its own.
    public var targets: [String] {
        (cases.flatMap(\.actions) + (otherwise ?? [])).compactMap { action in
            switch action {
            case .send(let id, _, _), .schedules(_, let id), .setField(let id, _, _): id
            case .reject, .store, .setState, .sendRecords, .deleteRecords, .wait: nil
            }
        }
    }
}

/// The layout of a request: an op code field first, then the parameters the op code selects.
public struct RequestLayout: Hashable, Sendable {
    /// The op code's field: its type (`u8`, `u16`) and the name replies and cases call it by (`op`).
    public var opCode: FieldSpec
    /// The op codes the device knows, each with its parameter fields.
    public var ops: [RequestOp]

    /// A layout from its parts.
    public init(opCode: FieldSpec, ops: [RequestOp]) {
        self.opCode = opCode
        self.ops = ops
    }

    /// How a written value reads against this layout: the op codes with its code are tried in order, and the first
    /// whose parameters fit its length and whose fixed fields hold their values is the one (RACP's Report Stored
    /// Records is one op code, read by its operator: all records, or those from a sequence number).
    public func parse(_ value: [UInt8]) -> ParsedRequest {
        guard let width = opCode.type.byteCount, value.count >= width,
            let decoded = ValueLayout([opCode]).decode(Array(value.prefix(width))),
            case .integer(let code) = decoded.first
        else { return ParsedRequest(code: nil, op: nil, parameters: [:], isMalformed: true) }
        let candidates = ops.filter { $0.code == code }
        guard !candidates.isEmpty else {
            return ParsedRequest(code: code, op: nil, parameters: [:], isMalformed: false)
        }
        let rest = Array(value.dropFirst(width))
        for op in candidates {
            guard let values = op.parameters.decode(rest) else { continue }
            let parameters = Dictionary(zip(op.parameters.fields.map(\.name), values)) { first, _ in first }
            guard op.fixed.allSatisfy({ name, fixed in parameters[name].map { ValueMatch.same($0, fixed) } == true })
            else { continue }
            return ParsedRequest(code: code, op: op.name, parameters: parameters, isMalformed: false)
        }
        return ParsedRequest(code: code, op: candidates[0].name, parameters: [:], isMalformed: true)
    }
}

/// One op code a request layout knows.
public struct RequestOp: Hashable, Sendable {
    /// Its name, as cases match it (`set-target-power`).
    public var name: String
    /// Its code on the wire.
    public var code: Int64
    /// The fields that follow the op code; a request of another length is malformed.
    public var parameters: ValueLayout
    /// Parameters that must hold these values for a request to be this op (an operator, a filter type).
    public var fixed: [String: FieldValue]

    /// An op code from its parts.
    public init(
        name: String, code: Int64, parameters: ValueLayout = ValueLayout([]), fixed: [String: FieldValue] = [:]
    ) {
        self.name = name
        self.code = code
        self.parameters = parameters
        self.fixed = fixed
    }
}

/// A written value as its request layout reads it.
public struct ParsedRequest: Hashable, Sendable {
    /// The op code, nil when the value is too short to hold one.
    public var code: Int64?
    /// The op code's name; nil for an op code the layout does not know (or none).
    public var op: String?
    /// The parameters by name, when the length fits the op code.
    public var parameters: [String: FieldValue]
    /// True when the value is too short for an op code, or fits none of the op codes with its code (a length that
    /// does not fit, or a fixed field that does not hold its value).
    public var isMalformed: Bool
}

/// One case of a protocol: conditions that must all hold, and what the device then does.
public struct ProtocolCase: Hashable, Sendable {
    /// The conditions, all of which must hold; none: the case always holds.
    public var conditions: [ProtocolCondition]
    /// The actions, in order.
    public var actions: [ProtocolAction]

    /// A case from its parts.
    public init(conditions: [ProtocolCondition], actions: [ProtocolAction]) {
        self.conditions = conditions
        self.actions = actions
    }
}

/// A condition a request and the device's state must meet.
public enum ProtocolCondition: Hashable, Sendable {
    /// The request's op code is one of these (by name), well formed.
    case op([String])
    /// The op code is one the layout does not know.
    case unknownOp
    /// The request is malformed: too short for an op code, or the wrong length for its op code's parameters.
    case malformed
    /// A parameter of the request matches.
    case parameter(String, ValueMatch)
    /// A state variable matches.
    case state(String, ValueMatch)
    /// The selection holds no record (RACP's "no records found").
    case noRecords(RecordSelection)
}

/// What a value must be.
public enum ValueMatch: Hashable, Sendable {
    /// One of these values.
    case oneOf([FieldValue])
    /// A number within the range.
    case range(ClosedRange<Double>)

    /// Whether `value` matches.
    public func admits(_ value: FieldValue) -> Bool {
        switch self {
        case .oneOf(let values):
            return values.contains { Self.same($0, value) }
        case .range(let range):
            guard let number = value.number else { return false }
            return range.contains(number)
        }
    }

    /// Equal values, a whole real equal to an integer included.
    static func same(_ left: FieldValue, _ right: FieldValue) -> Bool {
        if let a = left.number, let b = right.number { return a == b }
        return left == right
    }
}

/// Stored records a device keeps (a glucose meter's readings): values of one characteristic, oldest first, which
/// protocol actions send, count and delete (RACP, GLS 1.0 4.11: Report Stored Records and its siblings).
public struct RecordStore: Hashable, Sendable {
    /// The store's name, as selections name it.
    public var name: String
    /// The characteristic each record is a value of, and on which `send-records` sends it.
    public var characteristicID: String
    /// The records the device starts with, and returns to at `reset`.
    public var initial: [[UInt8]]

    /// A store from its parts.
    public init(name: String, characteristicID: String, initial: [[UInt8]]) {
        self.name = name
        self.characteristicID = characteristicID
        self.initial = initial
    }
}

/// Which records of a store an action or condition means: all, or those whose `field` lies between `min` and
/// `max` (either may go), then optionally only the first or the last of those.
public struct RecordSelection: Hashable, Sendable {
    /// First or last of the records selected, or all of them.
    public enum Position: String, Hashable, Sendable, CaseIterable {
        /// Every record selected.
        case all
        /// The oldest record selected.
        case first
        /// The newest record selected.
        case last
    }

    /// The store.
    public var store: String
    /// The field of the record's layout the bounds test; nil: no bounds.
    public var field: String?
    /// The lowest value of `field` selected, inclusive.
    public var min: ValueSource?
    /// The highest value of `field` selected, inclusive.
    public var max: ValueSource?
    /// All, the first or the last of what the bounds select.
    public var position: Position

    /// A selection from its parts; every record by default.
    public init(
        store: String, field: String? = nil, min: ValueSource? = nil, max: ValueSource? = nil,
        position: Position = .all
    ) {
        self.store = store
        self.field = field
        self.min = min
        self.max = max
        self.position = position
    }
}

/// Where a value an action uses comes from.
public indirect enum ValueSource: Hashable, Sendable {
    /// A value written in the profile.
    case literal(FieldValue)
    /// The request's op code, as a number (also for an op code the layout does not know; 0 when there is none).
    case opCode
    /// A parameter of the request.
    case parameter(String)
    /// A state variable's current value.
    case state(String)
    /// How many records a selection holds now.
    case count(RecordSelection)
}

/// One typed piece of a value an action builds: its type and where its value comes from.
public struct ValuePiece: Hashable, Sendable {
    /// How the piece is encoded.
    public var type: FieldType
    /// What it holds.
    public var source: ValueSource

    /// A piece from its parts.
    public init(type: FieldType, source: ValueSource) {
        self.type = type
        self.source = source
    }
}

/// One thing a protocol's case does.
public enum ProtocolAction: Hashable, Sendable {
    /// Answer the write with this error; nothing else happens (a case that rejects does nothing else).
    case reject(ATTError)
    /// Keep the written value as the characteristic's value.
    case store
    /// Set a state variable.
    case setState(String, ValueSource)
    /// Store a value built from `pieces` in a characteristic and push it as `kind` says (notify, indicate, update).
    case send(characteristicID: String, kind: Schedule.Action, pieces: [ValuePiece])
    /// Set one field of a characteristic's value, telling no subscriber; a counter, walk or `follow` that generates
    /// the field goes on from it (CSCS 1.0 3.4.2.1: Set Cumulative Value sets the wheel revolutions a sensor counts).
    case setField(characteristicID: String, field: String, source: ValueSource)
    /// Hold a characteristic's schedules (`pause`) or let them run again (`resume`).
    case schedules(ScheduleControl, characteristicID: String)
    /// Send each selected record, oldest first, on its store's characteristic (notified, else indicated).
    case sendRecords(RecordSelection)
    /// Delete the selected records.
    case deleteRecords(RecordSelection)
    /// Wait before the next action: a device that takes time, or an order bluetoothd keeps only with a gap
    /// (docs/bluez.md, "Notifications").
    case wait(Duration)
}

/// What an action does to a characteristic's schedules.
public enum ScheduleControl: String, Hashable, Sendable, CaseIterable {
    /// Hold them: no tick until resumed.
    case pause
    /// Let them run again from now.
    case resume
}
