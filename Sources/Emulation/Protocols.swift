import GATTModel
import GATTProfile

/// Answers writes to a profile's control points as its protocols say, and holds the device's state, as a state
/// machine with no clock and no I/O: the caller hands it a write and performs the decision.
///
/// A request is read by its layout (op code, then that op code's parameters), the first case whose conditions all
/// hold acts, else `otherwise`, else the write is refused with `DeviceProtocol.defaultRejection`. A case is one
/// transaction: it either rejects (and nothing changes) or performs its actions in order, each `set` seeing the
/// state the ones before it left. Values a case builds are made to fit their type (numbers rounded and clamped,
/// with a warning), never refused mid-run; the decoder has checked every name and literal already.
public struct Protocols: Sendable {
    /// What answering one write did: the decision, and which case acted (nil: `otherwise` or the default).
    public struct Outcome: Sendable {
        /// What to answer, and what to do after answering.
        public var decision: WriteRules.Decision
        /// The index of the case that acted; nil when none did.
        public var caseIndex: Int?
        /// What the event log says of it (`EmulationEvent.protocolCase`).
        public var trace: Trace? = nil
    }

    /// A request as the event log records it: how it read, which case acted, and the state it changed.
    public struct Trace: Hashable, Sendable {
        /// The characteristic written.
        public var characteristicID: String
        /// The op code's name; `unknown 0x13` for one the layout does not know, `malformed` for a bad length.
        public var request: String
        /// Which case acted, `case N: <when in words>`, or `otherwise`, or `none` (refused with the default).
        public var acted: String
        /// The variables the case set, with their new values, in the order set; empty when it was refused.
        public var changes: [StateChange]
        /// The fields of values the case set (`set-field`), named `characteristic.field`, in the order set.
        public var fields: [StateChange] = []
    }

    /// A state variable a case set.
    public struct StateChange: Hashable, Sendable {
        /// The variable.
        public var name: String
        /// Its value now.
        public var value: FieldValue
    }

    private let protocols: [String: DeviceProtocol]
    /// Each protocol's cases in words, `case N: <when>`, made once so a traced write builds no text.
    private let caseLabels: [String: [String]]
    private let types: [String: FieldType]
    /// Each characteristic's fields by name, for `set-field`, which fits its value to the field as `set` does.
    private let fieldSpecs: [String: [String: FieldSpec]]
    private let initialState: [String: FieldValue]
    /// The device's state now, by variable name.
    public private(set) var state: [String: FieldValue]
    /// Each record store's characteristic, with its layout and how a record goes to centrals.
    private let stores: [String: (characteristic: Characteristic, kind: Schedule.Action)]
    private let initialRecords: [String: [[UInt8]]]
    /// The records each store holds now, oldest first.
    public private(set) var records: [String: [[UInt8]]]

    /// The protocols and state of a profile. Throws `BehaviourError` when a protocol names an unknown
    /// characteristic (the decoder refuses such a profile; a hand-built one may still).
    public init(profile: PeripheralProfile) throws(BehaviourError) {
        let ids = Set(profile.characteristics.map(\.id))
        for deviceProtocol in profile.behaviour.protocols {
            for id in [deviceProtocol.characteristicID] + deviceProtocol.targets where !ids.contains(id) {
                throw .unknownCharacteristic(id)
            }
        }
        protocols = Dictionary(profile.behaviour.protocols.map { ($0.characteristicID, $0) }) { first, _ in first }
        caseLabels = protocols.mapValues { deviceProtocol in
            deviceProtocol.cases.indices.map { Self.label(of: deviceProtocol, case: $0) }
        }
        var stores: [String: (characteristic: Characteristic, kind: Schedule.Action)] = [:]
        for store in profile.behaviour.records {
            guard let characteristic = profile.characteristic(id: store.characteristicID) else {
                throw .unknownCharacteristic(store.characteristicID)
            }
            stores[store.name] = (characteristic, characteristic.properties.contains(.notify) ? .notify : .indicate)
        }
        self.stores = stores
        initialRecords = Dictionary(profile.behaviour.records.map { ($0.name, $0.initial) }) { first, _ in first }
        records = initialRecords
        types = Dictionary(profile.behaviour.state.map { ($0.name, $0.type) }) { first, _ in first }
        fieldSpecs = Dictionary(
            profile.characteristics.compactMap { characteristic in
                characteristic.layout.map { layout in
                    (characteristic.id, Dictionary(layout.fields.map { ($0.name, $0) }) { first, _ in first })
                }
            }
        ) { first, _ in first }
        initialState = Dictionary(profile.behaviour.state.map { ($0.name, $0.initial) }) { first, _ in first }
        state = initialState
    }

    /// A case in the event log's words: `case N: <when in words>`.
    static func label(of deviceProtocol: DeviceProtocol, case index: Int) -> String {
        let conditions = deviceProtocol.cases[index].conditions
        return "case \(index + 1): "
            + (conditions.isEmpty ? "any request" : conditions.map(ProtocolText.describe).joined(separator: " and "))
    }

    /// Whether a protocol answers writes to the characteristic.
    public func handles(_ characteristicID: String) -> Bool { protocols[characteristicID] != nil }

    /// Decides a central's write of `value` to a characteristic a protocol answers.
    public mutating func write(_ value: [UInt8], to characteristicID: String) -> Outcome {
        guard let deviceProtocol = protocols[characteristicID] else {
            return Outcome(decision: .reject(DeviceProtocol.defaultRejection), caseIndex: nil)
        }
        let request = deviceProtocol.request.parse(value)
        let chosen = deviceProtocol.cases.firstIndex { item in
            item.conditions.allSatisfy { holds($0, for: request) }
        }
        var trace = Trace(
            characteristicID: characteristicID, request: Self.describe(request),
            acted: chosen.map { caseLabels[characteristicID]?[$0] ?? "case \($0 + 1)" }
                ?? (deviceProtocol.otherwise == nil ? "none" : "otherwise"),
            changes: [])
        guard let actions = chosen.map({ deviceProtocol.cases[$0].actions }) ?? deviceProtocol.otherwise else {
            return Outcome(decision: .reject(DeviceProtocol.defaultRejection), caseIndex: nil, trace: trace)
        }
        var state = self.state
        var records = self.records
        var performed: [EmulationAction] = []
        for action in actions {
            switch action {
            case .reject(let error):
                return Outcome(decision: .reject(error), caseIndex: chosen, trace: trace)
            case .store:
                performed.append(.update(characteristicID: characteristicID, value: value))
            case .setState(let name, let source):
                guard let type = types[name] else { continue }
                let (fitted, warning) = Self.fit(
                    resolve(source, request: request, state: state, records: records), to: type, name: name)
                state[name] = fitted
                trace.changes.append(StateChange(name: name, value: fitted))
                if let warning { performed.append(.warning(characteristicID: characteristicID, message: warning)) }
            case .setField(let id, let field, let source):
                guard let spec = fieldSpecs[id]?[field] else { continue }
                let (fitted, warning) = ValueComposer.fit(
                    resolve(source, request: request, state: state, records: records), to: spec,
                    keeping: ValueComposer.zero(of: spec.type))
                trace.fields.append(StateChange(name: id + "." + field, value: fitted))
                if let warning { performed.append(.warning(characteristicID: id, message: warning)) }
                performed.append(.setField(characteristicID: id, field: field, value: fitted))
            case .send(let id, let kind, let pieces):
                let (bytes, warnings) = build(pieces, request: request, state: state, records: records)
                performed += warnings.map { .warning(characteristicID: id, message: $0) }
                performed.append(.storing(bytes, in: id, by: kind))
            case .schedules(let control, let id):
                performed.append(
                    control == .pause ? .pauseSchedules(characteristicID: id) : .resumeSchedules(characteristicID: id))
            case .sendRecords(let selection):
                guard let store = stores[selection.store] else { continue }
                for index in selected(selection, request: request, state: state, records: records) {
                    performed.append(
                        .storing(records[selection.store]?[index] ?? [], in: store.characteristic.id, by: store.kind))
                }
            case .wait(let duration):
                performed.append(.wait(duration))
            case .deleteRecords(let selection):
                let doomed = Set(selected(selection, request: request, state: state, records: records))
                records[selection.store] = records[selection.store]?.enumerated().filter { !doomed.contains($0.offset) }
                    .map(\.element)
            }
        }
        self.state = state
        self.records = records
        return Outcome(decision: .accept(performed), caseIndex: chosen, trace: trace)
    }

    /// Sets a variable from outside a request (the control socket's `state`), fitted to its type as a `set` is.
    /// Returns the value now held and a warning when it had to be adjusted; nil for an unknown name.
    public mutating func set(_ name: String, to value: FieldValue) -> (FieldValue, String?)? {
        guard let type = types[name] else { return nil }
        let (fitted, warning) = Self.fit(value, to: type, name: name)
        state[name] = fitted
        return (fitted, warning)
    }

    /// The declared type of a variable; nil for an unknown name.
    public func type(of name: String) -> FieldType? { types[name] }

    /// A request in the event log's words.
    static func describe(_ request: ParsedRequest) -> String {
        if request.isMalformed { return "malformed" }
        if let op = request.op { return op }
        return "unknown " + ProtocolText.hex(request.code ?? 0)
    }

    /// Every variable back to its initial value, every record store to its initial records (`reset`).
    public mutating func reset() {
        state = initialState
        records = initialRecords
    }

    /// The indices of the records `selection` means, oldest first.
    private func selected(
        _ selection: RecordSelection, request: ParsedRequest, state: [String: FieldValue],
        records: [String: [[UInt8]]]
    ) -> [Int] {
        guard let store = stores[selection.store], let stored = records[selection.store] else { return [] }
        var indices = Array(stored.indices)
        if let field = selection.field, let layout = store.characteristic.layout, let position = layout.index(of: field)
        {
            let low = selection.min.flatMap { resolve($0, request: request, state: state, records: records).number }
            let high = selection.max.flatMap { resolve($0, request: request, state: state, records: records).number }
            indices = indices.filter { index in
                guard let value = layout.decode(stored[index])?[position].number else { return false }
                return value >= (low ?? -.infinity) && value <= (high ?? .infinity)
            }
        }
        switch selection.position {
        case .all: return indices
        case .first: return Array(indices.prefix(1))
        case .last: return Array(indices.suffix(1))
        }
    }

    private func holds(_ condition: ProtocolCondition, for request: ParsedRequest) -> Bool {
        switch condition {
        case .op(let names): !request.isMalformed && request.op.map(names.contains) == true
        case .unknownOp: !request.isMalformed && request.code != nil && request.op == nil
        case .malformed: request.isMalformed
        case .parameter(let name, let match):
            !request.isMalformed && request.parameters[name].map(match.admits) == true
        case .state(let name, let match): state[name].map(match.admits) == true
        case .noRecords(let selection): selected(selection, request: request, state: state, records: records).isEmpty
        }
    }

    private func resolve(
        _ source: ValueSource, request: ParsedRequest, state: [String: FieldValue], records: [String: [[UInt8]]]
    ) -> FieldValue {
        switch source {
        case .literal(let value): value
        case .opCode: .integer(request.code ?? 0)
        // A malformed request has no parameters: a reply that names one sends its type's zero.
        case .parameter(let name): request.parameters[name] ?? .integer(0)
        case .state(let name): state[name] ?? .integer(0)
        case .count(let selection):
            .integer(Int64(selected(selection, request: request, state: state, records: records).count))
        }
    }

    /// The bytes of `pieces`, each value fitted to its piece's type, and what had to be adjusted.
    private func build(
        _ pieces: [ValuePiece], request: ParsedRequest, state: [String: FieldValue], records: [String: [[UInt8]]]
    ) -> ([UInt8], [String]) {
        let layout = ValueLayout(
            pieces.enumerated().map { FieldSpec(name: "piece \($0.offset + 1)", type: $0.element.type) })
        let updates = pieces.enumerated().map {
            ($0.offset, resolve($0.element.source, request: request, state: state, records: records))
        }
        let composition = ValueComposer.compose(updates, into: [], layout: layout)
        return (composition.value, composition.warnings)
    }

    /// `value` made to fit a variable of `type`, as a generated field value is.
    private static func fit(_ value: FieldValue, to type: FieldType, name: String) -> (FieldValue, String?) {
        ValueComposer.fit(value, to: FieldSpec(name: name, type: type), keeping: ValueComposer.zero(of: type))
    }
}
