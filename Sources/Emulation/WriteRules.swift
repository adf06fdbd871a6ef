import GATTModel
import GATTProfile

/// Answers writes as a profile's write rules say, as a state machine: the caller hands it a write and performs the
/// decision, and drives `set` ramps (a thermostat's room moving toward its set point) with `tick(at:)`.
///
/// A write to a characteristic without a rule is accepted and stored, as a plain writable value would be.
/// A rule's actions run in order; the first failed `validate` rejects the write and **nothing** of the rule takes
/// effect, not even actions listed before it: a rule is one transaction, all or nothing. `set`, `reply` and `echo`
/// push their value the way the target's properties allow: notify, else indicate, else only store (the same default
/// a schedule's `action` takes).
public struct WriteRules: Sendable {
    /// What to answer a write with.
    public enum Decision: Hashable, Sendable {
        /// Answer with this error; nothing changes.
        case reject(ATTError)
        /// Answer with success, then perform these actions in order (they include storing the written value).
        case accept([EmulationAction])
    }

    /// A field moving toward a target at a fixed rate.
    private struct Ramp: Hashable, Sendable {
        var characteristicID: String
        var fieldIndex: Int
        var from: Double
        var to: Double
        var ratePerSecond: Double
        var startTime: Duration
        var nextTick: Duration

        func value(at now: Duration) -> Double {
            let distance = ratePerSecond * max((now - startTime).seconds, 0)
            // Land exactly on the target, so the ramp knows it is done despite floating-point rounding.
            if distance >= abs(to - from) { return to }
            return to >= from ? from + distance : from - distance
        }
    }

    private let characteristics: [String: Characteristic]
    private let rules: [String: WriteRule]
    private let rampInterval: Duration
    private var values: [String: [UInt8]]
    /// Whether any rule `set`s into a field: only then does a value changed elsewhere matter here.
    private let composesFields: Bool
    private var ramps: [Ramp] = []
    /// The profile's control-point protocols and the device's state they keep.
    public private(set) var protocols: Protocols

    /// The write rules of a profile. A ramp moves its field every `rampInterval`.
    ///
    /// Throws `BehaviourError` when a rule names an unknown characteristic or field.
    public init(profile: PeripheralProfile, rampInterval: Duration = .seconds(1)) throws(BehaviourError) {
        let characteristics = Dictionary(profile.characteristics.map { ($0.id, $0) }) { first, _ in first }
        for rule in profile.behaviour.writeRules {
            guard characteristics[rule.characteristicID] != nil else {
                throw .unknownCharacteristic(rule.characteristicID)
            }
            for action in rule.actions {
                switch action {
                case .set(let id, let field, _):
                    guard let target = characteristics[id] else { throw .unknownCharacteristic(id) }
                    if let field, target.layout?.index(of: field) == nil {
                        throw .unknownField(characteristicID: id, field: field)
                    }
                case .reply(let id, _):
                    guard characteristics[id] != nil else { throw .unknownCharacteristic(id) }
                case .store, .validate, .echo:
                    break
                }
            }
        }
        self.characteristics = characteristics
        rules = Dictionary(profile.behaviour.writeRules.map { ($0.characteristicID, $0) }) { first, _ in first }
        self.rampInterval = rampInterval > .zero ? rampInterval : .seconds(1)
        values = characteristics.mapValues(\.value.bytes)
        composesFields = profile.behaviour.writeRules.contains { rule in
            rule.actions.contains { if case .set(_, .some, _) = $0 { true } else { false } }
        }
        protocols = try Protocols(profile: profile)
    }

    /// Whether a rule or a protocol answers writes to the characteristic; without one a write is stored as written.
    public func hasRule(for characteristicID: String) -> Bool {
        rules[characteristicID] != nil || protocols.handles(characteristicID)
    }

    /// The device's state, by variable name (`behaviour.state`).
    public var state: [String: FieldValue] { protocols.state }

    /// Decides a central's write of `value` to a characteristic at `now` (the caller's clock, as for `tick(at:)`).
    public mutating func write(_ value: [UInt8], to characteristicID: String, at now: Duration) -> Decision {
        traced(value, to: characteristicID, at: now).decision
    }

    /// `write`, with what the event log says of a write a protocol answered (nil for a write rule's).
    public mutating func traced(
        _ value: [UInt8], to characteristicID: String, at now: Duration
    ) -> (decision: Decision, trace: Protocols.Trace?) {
        if protocols.handles(characteristicID) {
            let outcome = protocols.write(value, to: characteristicID)
            if case .accept(let actions) = outcome.decision {
                for action in actions {
                    if let id = action.characteristicID, let stored = action.value { values[id] = stored }
                }
            }
            return (outcome.decision, outcome.trace)
        }
        return (rule(value, to: characteristicID, at: now), nil)
    }

    /// Sets a state variable from the control socket; see `Protocols.set`.
    public mutating func setState(_ name: String, to value: FieldValue) -> (FieldValue, String?)? {
        protocols.set(name, to: value)
    }

    /// The declared type of a state variable; nil for an unknown name.
    public func stateType(of name: String) -> FieldType? { protocols.type(of: name) }

    /// A write rule's decision (or the plain store for a characteristic without one).
    private mutating func rule(_ value: [UInt8], to characteristicID: String, at now: Duration) -> Decision {
        guard let rule = rules[characteristicID] else {
            values[characteristicID] = value
            return .accept([.update(characteristicID: characteristicID, value: value)])
        }
        // Work on copies and commit only on acceptance, so a rejection leaves no trace.
        var values = self.values
        var ramps = self.ramps
        var actions: [EmulationAction] = []
        for action in rule.actions {
            switch action {
            case .store:
                values[characteristicID] = value
                actions.append(.update(characteristicID: characteristicID, value: value))
            case .validate(let check, let error):
                guard check.admits(value, to: characteristics[characteristicID]) else { return .reject(error) }
            case .set(let targetID, let field, let rate):
                actions += set(
                    value, from: characteristicID, into: targetID, field: field, rate: rate, at: now,
                    values: &values, ramps: &ramps)
            case .reply(let targetID, let reply):
                values[targetID] = reply
                actions.append(.storing(reply, in: targetID, by: pushKind(targetID)))
            case .echo:
                values[characteristicID] = value
                actions.append(.storing(value, in: characteristicID, by: pushKind(characteristicID)))
            }
        }
        self.values = values
        self.ramps = ramps
        return .accept(actions)
    }

    /// Tells the engine a value changed elsewhere (a schedule, a plain write), so `set` into a field composes on it.
    /// Rules that set no field compose on nothing, and are not told: a write would hash its id for no one.
    public mutating func valueChanged(_ characteristicID: String, to value: [UInt8]) {
        guard composesFields else { return }
        values[characteristicID] = value
    }

    /// The value the engine last stored, or was told about when a rule sets a field.
    public func value(of characteristicID: String) -> [UInt8]? { values[characteristicID] }

    /// When the next ramp step is due; nil when no ramp is moving.
    public var nextDeadline: Duration? { ramps.map(\.nextTick).min() }

    /// Moves every due ramp to where its rate has brought it by `now` (once, however many steps were missed) and
    /// returns the new values; a ramp that reached its target ends.
    public mutating func tick(at now: Duration) -> [EmulationAction] {
        var actions: [EmulationAction] = []
        var remaining: [Ramp] = []
        for var ramp in ramps {
            guard ramp.nextTick <= now else {
                remaining.append(ramp)
                continue
            }
            let current = ramp.value(at: now)
            actions += apply(.real(current), to: ramp.characteristicID, fieldIndex: ramp.fieldIndex)
            if current != ramp.to {
                ramp.nextTick = Schedules.firstGridPoint(
                    after: now, anchor: ramp.startTime, interval: rampInterval)
                remaining.append(ramp)
            }
        }
        ramps = remaining
        return actions
    }

    private mutating func apply(_ number: FieldValue, to id: String, fieldIndex: Int) -> [EmulationAction] {
        guard let layout = characteristics[id]?.layout else { return [] }
        let composition = ValueComposer.compose([(fieldIndex, number)], into: values[id] ?? [], layout: layout)
        values[id] = composition.value
        return composition.warnings.map { .warning(characteristicID: id, message: $0) }
            + [.storing(composition.value, in: id, by: pushKind(id))]
    }

    private func set(
        _ value: [UInt8], from sourceID: String, into targetID: String, field: String?, rate: Double?, at now: Duration,
        values: inout [String: [UInt8]], ramps: inout [Ramp]
    ) -> [EmulationAction] {
        guard let field, let layout = characteristics[targetID]?.layout, let index = layout.index(of: field) else {
            values[targetID] = value
            return [.storing(value, in: targetID, by: pushKind(targetID))]
        }
        guard let number = WriteCheck.number(in: value, of: characteristics[sourceID]) else {
            return [.warning(characteristicID: targetID, message: "`set`: written value is not a number; ignored")]
        }
        // A new set on the same field replaces its ramp, starting from where the old one had got to.
        let previous = ramps.firstIndex { $0.characteristicID == targetID && $0.fieldIndex == index }
        let from: Double? =
            if let previous { ramps[previous].value(at: now) } else {
                layout.decode(values[targetID] ?? [])?[index].number
            }
        if let previous { ramps.remove(at: previous) }
        if let rate, rate > 0, let from, from != number {
            ramps.append(
                Ramp(
                    characteristicID: targetID, fieldIndex: index, from: from, to: number, ratePerSecond: rate,
                    startTime: now, nextTick: now + rampInterval))
            return []
        }
        let composition = ValueComposer.compose([(index, .real(number))], into: values[targetID] ?? [], layout: layout)
        values[targetID] = composition.value
        return composition.warnings.map { .warning(characteristicID: targetID, message: $0) }
            + [.storing(composition.value, in: targetID, by: pushKind(targetID))]
    }

    /// How a value set on `id` reaches centrals: notify if it can, else indicate, else stored only.
    private func pushKind(_ id: String) -> Schedule.Action {
        guard let properties = characteristics[id]?.properties else { return .update }
        if properties.contains(.notify) { return .notify }
        if properties.contains(.indicate) { return .indicate }
        return .update
    }
}
