import GATTModel

/// The `behaviour` section: parsed and checked against the declared characteristics; the Emulation module runs it.
extension ProfileDecoder {
    static let generatorNames = ["constant", "sequence", "counter", "random-walk", "sine", "replay", "follow"]

    /// Decodes `behaviour: {state, schedules, write-rules, protocols, faults}`: the state first, whatever the key
    /// order, since schedules and protocols read it; then the schedules, which protocols may pause and resume.
    mutating func decodeBehaviour(_ node: YAMLNode) -> Behaviour? {
        guard
            let map = fields(
                node, in: "`behaviour`",
                allowed: ["state", "records", "schedules", "write-rules", "protocols", "faults"])
        else { return nil }
        var behaviour = Behaviour()
        if let stateNode = map["state"] {
            behaviour.state = decodeState(stateNode)
            stateVariables = Dictionary(behaviour.state.map { ($0.name, $0) }) { first, _ in first }
        }
        if let recordsNode = map["records"] { behaviour.records = decodeRecords(recordsNode) }
        if let list = map["schedules"].flatMap({ sequence($0, in: "`schedules`") }) {
            behaviour.schedules = list.compactMap { decodeSchedule($0) }
            scheduledCharacteristics = Set(behaviour.schedules.map(\.characteristicID))
        }
        if let list = map["write-rules"].flatMap({ sequence($0, in: "`write-rules`") }) {
            behaviour.writeRules = list.compactMap { decodeWriteRule($0) }
        }
        if let list = map["protocols"].flatMap({ sequence($0, in: "`protocols`") }) {
            let writeRuled = Set(behaviour.writeRules.map(\.characteristicID))
            for item in list {
                guard let decoded = decodeProtocol(item, writeRuled: writeRuled) else { continue }
                if behaviour.protocols.contains(where: { $0.characteristicID == decoded.characteristicID }) {
                    report(item, "characteristic `\(decoded.characteristicID)` has a protocol already")
                    continue
                }
                behaviour.protocols.append(decoded)
            }
        }
        if let list = map["faults"].flatMap({ sequence($0, in: "`faults`") }) {
            behaviour.faults = list.compactMap { decodeFault($0) }
        }
        return behaviour
    }

    /// The declared characteristic an id names; unknown ids are reported with the closest id as a hint.
    /// Ids of characteristics that failed to decode return nil silently: their errors are already reported.
    mutating func lookUpCharacteristic(_ node: YAMLNode, for what: String) -> Declared? {
        guard let id = string(node, for: what) else { return nil }
        if let entry = declared[id] { return entry }
        if serviceIDs.contains(id) {
            report(node, "`\(id)` is a service; \(what) must name a characteristic")
        } else if ids[id] == nil {
            report(
                node, "unknown characteristic `\(id)` in \(what)", hint: EditDistance.hint(for: id, in: declaredOrder))
        }
        return nil
    }

    // MARK: Faults

    private mutating func decodeFault(_ node: YAMLNode) -> Fault? {
        guard let map = fields(node, in: "fault", allowed: ["when", "then"], required: ["when", "then"]),
            let whenNode = map["when"], let thenNode = map["then"]
        else { return nil }
        let trigger = decodeTrigger(whenNode)
        var operation: AttributeOperation?
        if case .request(let requested, _, _) = trigger { operation = requested }
        let effect = decodeEffect(thenNode, operation: operation)
        guard let trigger, let effect else { return nil }
        if case .request(.write, let id, _) = trigger, case .reject = effect {
            for target in id.map({ [$0] }) ?? declaredOrder {
                declared[target]?.writeErrorSources.append("the write fault")
            }
        }
        return Fault(trigger: trigger, effect: effect)
    }

    private mutating func decodeTrigger(_ node: YAMLNode) -> Fault.Trigger? {
        guard let map = fields(node, in: "fault `when`", allowed: ["request", "characteristic", "nth", "after"]) else {
            return nil
        }
        if let after = map["after"] {
            if let other = ["request", "characteristic", "nth"].first(where: { map[$0] != nil }),
                let at = map.keyNode(other)
            {
                report(at, "a fault triggers `after` a time or on a `request`, not both")
                return nil
            }
            return duration(after, for: "`after`").map { .after($0) }
        }
        guard let requestNode = map["request"] else {
            report(node, "fault `when` needs `request` (an operation) or `after` (a duration)")
            return nil
        }
        guard let name = choice(requestNode, for: "operation", from: AttributeOperation.allCases.map(\.rawValue)),
            let operation = AttributeOperation(rawValue: name)
        else { return nil }
        var id: String?
        if let at = map["characteristic"] {
            guard let target = lookUpCharacteristic(at, for: "fault `characteristic`") else { return nil }
            guard Self.allows(operation, target.characteristic.properties) else {
                report(
                    at,
                    "characteristic `\(target.characteristic.id)` does not allow `\(name)`, so the fault never fires")
                return nil
            }
            id = target.characteristic.id
        }
        var nth: Int64 = 1
        if let at = map["nth"] {
            guard let value = integer(at, for: "`nth`", in: 1...Int64(Int32.max)) else { return nil }
            nth = value
        }
        return .request(operation, characteristicID: id, nth: Int(nth))
    }

    /// A fault's effect; `operation` is the request it answers (nil when time-triggered or unknown).
    private mutating func decodeEffect(_ node: YAMLNode, operation: AttributeOperation?) -> Fault.Effect? {
        if node.scalar != nil {
            guard
                let name = choice(
                    node, for: "fault effect", from: ["disconnect", "stop-advertising", "reject", "delay"])
            else { return nil }
            switch name {
            case "disconnect": return .disconnect
            case "stop-advertising": return .stopAdvertising
            default:
                report(node, "fault effect `\(name)` takes a parameter: `\(name): ...`")
                return nil
            }
        }
        guard let (name, body) = tagged(node, in: "fault `then`", allowed: ["reject", "delay"]) else { return nil }
        if name == "reject" { return attError(body, on: operation).map { .reject($0) } }
        return duration(body, for: "`delay`").map { .delay($0) }
    }

    // MARK: Warnings

    /// bluetoothd answers a Write Request at once when the characteristic also has `write-without-response`
    /// (docs/bluez.md, "Writes"), so a profile's write errors would never reach the central.
    mutating func warnAboutUnreachableWriteErrors() {
        for id in declaredOrder {
            guard let entry = declared[id], !entry.writeErrorSources.isEmpty,
                entry.characteristic.properties.isSuperset(of: [.write, .writeWithoutResponse])
            else { continue }
            var sources: [String] = []
            for source in entry.writeErrorSources where !sources.contains(source) { sources.append(source) }
            warn(
                entry.propertiesMark,
                "`\(id)` mixes `write` with `write-without-response`: bluetoothd acknowledges its writes at once, "
                    + "so errors from \(sources.joined(separator: " and ")) never reach the central",
                hint: "drop `write-without-response` if centrals must see the errors")
        }
    }
}

extension FieldType {
    /// Whether the field holds a number that numeric generators can produce.
    var isNumeric: Bool {
        switch self {
        case .unsigned, .signed, .float32, .sfloat, .medfloat: true
        default: false
        }
    }

    /// Whether the field holds an integer.
    var isInteger: Bool {
        switch self {
        case .unsigned, .signed: true
        default: false
        }
    }
}
