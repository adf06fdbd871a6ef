import BlueZModel
import GATTModel

/// The `behaviour` section: parsed and checked against the declared characteristics; the Emulation module runs it.
extension ProfileDecoder {
    static let generatorNames = ["constant", "sequence", "counter", "random-walk", "sine", "replay"]

    /// Decodes `behaviour: {schedules, write-rules, faults}`.
    mutating func decodeBehaviour(_ node: YAMLNode) -> Behaviour? {
        guard let map = fields(node, in: "`behaviour`", allowed: ["schedules", "write-rules", "faults"]) else {
            return nil
        }
        var behaviour = Behaviour()
        if let list = map["schedules"].flatMap({ sequence($0, in: "`schedules`") }) {
            behaviour.schedules = list.compactMap { decodeSchedule($0) }
        }
        if let list = map["write-rules"].flatMap({ sequence($0, in: "`write-rules`") }) {
            behaviour.writeRules = list.compactMap { decodeWriteRule($0) }
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

    // MARK: Schedules

    private mutating func decodeSchedule(_ node: YAMLNode) -> Schedule? {
        let keys = ["characteristic", "interval", "action", "start", "fields", "value"]
        guard let map = fields(node, in: "schedule", allowed: keys, required: ["characteristic"]) else {
            return nil
        }
        let isTransfer = map["action"]?.scalar == Schedule.Action.transfer.rawValue
        let target = map["characteristic"].flatMap { lookUpCharacteristic($0, for: "schedule `characteristic`") }
        var interval = map["interval"].flatMap { duration($0, for: "`interval`") }
        if let interval, interval <= .zero, let at = map["interval"] {
            report(at, "a schedule's `interval` must be above zero")
        }
        // A transfer goes at the link's pace (as fast as the queue takes it), so an interval would be a promise
        // it does not keep; every other schedule needs one.
        if isTransfer, let at = map["interval"] {
            report(at, "a `transfer` has no `interval`: it sends as fast as the queue takes each chunk")
            interval = nil
        } else if isTransfer {
            interval = .zero
        } else if map["interval"] == nil {
            report(node, "missing key `interval` in schedule")
        }
        var start = Schedule.Start.launch
        if let value = map["start"],
            let name = choice(value, for: "schedule start", from: Schedule.Start.allCases.map(\.rawValue)),
            let decoded = Schedule.Start(rawValue: name)
        {
            start = decoded
        }
        var action: Schedule.Action?
        if let value = map["action"] {
            if let name = choice(value, for: "schedule action", from: Schedule.Action.allCases.map(\.rawValue)) {
                action = Schedule.Action(rawValue: name)
            }
        } else if let target {
            let properties = target.characteristic.properties
            action = properties.contains(.notify) ? .notify : properties.contains(.indicate) ? .indicate : .update
        }
        guard let target, let action else { return nil }
        let characteristic = target.characteristic
        var isValid = interval.map { $0 > .zero || isTransfer } ?? false
        if let at = map["characteristic"] {
            if characteristic.value.isCached {
                report(at, "characteristic `\(characteristic.id)` has a constant (cached) value, which cannot change")
                isValid = false
            }
            if action == .transfer && start != .firstSubscription {
                report(map["start"] ?? at, "a `transfer` starts for each subscriber: `start: first-subscription`")
                isValid = false
            }
            if (action == .notify || action == .transfer) && !characteristic.properties.contains(.notify) {
                report(
                    map["action"] ?? at, "characteristic `\(characteristic.id)` cannot notify (no `notify` property)")
                isValid = false
            }
            if action == .indicate && !characteristic.properties.contains(.indicate) {
                report(
                    map["action"] ?? at,
                    "characteristic `\(characteristic.id)` cannot indicate (no `indicate` property)")
                isValid = false
            }
        }
        var generators: [FieldGenerator] = []
        switch (map["fields"], map["value"]) {
        case (.some(let fieldsNode), .some):
            report(fieldsNode, "a schedule takes `fields` or `value`, not both")
            isValid = false
        case (nil, nil):
            report(node, "a schedule needs `fields` (a generator per field) or `value` (one for the whole value)")
            isValid = false
        case (.some(let fieldsNode), nil):
            guard let layout = characteristic.layout else {
                report(
                    fieldsNode,
                    "characteristic `\(characteristic.id)` declares no `fields`, so generators cannot name fields")
                return nil
            }
            guard case .mapping(let pairs) = fieldsNode.kind else {
                report(fieldsNode, "expected a mapping of field names to generators, found \(fieldsNode.kindName)")
                return nil
            }
            for (key, value) in pairs {
                guard let name = string(key, for: "a field name") else { continue }
                guard let index = layout.index(of: name) else {
                    report(
                        key, "characteristic `\(characteristic.id)` has no field `\(name)`",
                        hint: EditDistance.hint(for: name, in: layout.fields.map(\.name)))
                    isValid = false
                    continue
                }
                if generators.contains(where: { $0.field == name }) {
                    report(key, "field `\(name)` has two generators")
                    isValid = false
                    continue
                }
                if let generator = generator(
                    value, field: layout.fields[index], maximumLength: characteristic.maximumLength)
                {
                    generators.append(FieldGenerator(field: name, generator: generator))
                } else {
                    isValid = false
                }
            }
        case (nil, .some(let value)):
            if let generator = generator(value, field: nil, maximumLength: characteristic.maximumLength) {
                generators.append(FieldGenerator(field: nil, generator: generator))
            } else {
                isValid = false
            }
        }
        if isValid && action == .transfer && Schedule.transferText(of: generators) == nil {
            report(
                map["value"] ?? node,
                "a `transfer` streams a `value` `sequence` of text or bytes that does not repeat and ends with `EOM`")
            isValid = false
        }
        guard isValid, let interval else { return nil }
        return Schedule(
            characteristicID: characteristic.id, action: action, interval: interval, start: start,
            generators: generators)
    }

    /// A generator for one typed field (values must fit its type) or, with `field` nil, for the whole value.
    private mutating func generator(_ node: YAMLNode, field: FieldSpec?, maximumLength: Int) -> Generator? {
        guard let (kind, body) = tagged(node, in: "generator", allowed: Self.generatorNames) else { return nil }
        switch kind {
        case "constant":
            return generatorValue(body, field: field, maximumLength: maximumLength).map { .constant($0) }
        case "sequence":
            var items: [YAMLNode]
            var repeats = true
            if case .sequence(let list) = body.kind {
                items = list
            } else {
                guard let map = fields(body, in: "`sequence`", allowed: ["values", "repeats"], required: ["values"]),
                    let list = map["values"].flatMap({ sequence($0, in: "`values`") })
                else { return nil }
                items = list
                if let value = map["repeats"], let flag = boolean(value, for: "`repeats`") { repeats = flag }
            }
            guard !items.isEmpty else {
                report(body, "a `sequence` needs at least one value")
                return nil
            }
            let values = items.compactMap { generatorValue($0, field: field, maximumLength: maximumLength) }
            return values.count == items.count ? .sequence(values, repeats: repeats) : nil
        case "counter", "random-walk":
            guard let field = numericField(field, generator: kind, at: node) else { return nil }
            let keys =
                kind == "counter" ? ["start", "step", "min", "max", "wraps"] : ["start", "step", "min", "max", "seed"]
            guard let map = fields(body, in: "`\(kind)`", allowed: keys, required: ["step", "min", "max"]),
                let step = map["step"].flatMap({ number($0, for: "`step`") }),
                let low = map["min"].flatMap({ fitting($0, field: field) }),
                let high = map["max"].flatMap({ fitting($0, field: field) })
            else { return nil }
            guard low <= high else {
                report(body, "`min` \(low) is above `max` \(high)")
                return nil
            }
            var start = low
            if let value = map["start"] {
                guard let decoded = fitting(value, field: field) else { return nil }
                guard (low...high).contains(decoded) else {
                    report(value, "`start` \(decoded) is outside `min`...`max` (\(low)...\(high))")
                    return nil
                }
                start = decoded
            }
            if kind == "counter" {
                var wraps = true
                if let value = map["wraps"] {
                    guard let flag = boolean(value, for: "`wraps`") else { return nil }
                    wraps = flag
                }
                return .counter(start: start, step: step, range: low...high, wraps: wraps)
            }
            var seed: UInt64 = 0
            if let value = map["seed"] {
                guard let decoded = integer(value, for: "`seed`", in: 0...Int64.max) else { return nil }
                seed = UInt64(decoded)
            }
            guard step >= 0 else {
                report(map["step"] ?? body, "a random walk's `step` cannot be negative")
                return nil
            }
            return .randomWalk(start: start, step: step, range: low...high, seed: seed)
        case "sine":
            guard let field = numericField(field, generator: kind, at: node),
                let map = fields(
                    body, in: "`sine`", allowed: ["period", "amplitude", "offset"],
                    required: ["period", "amplitude", "offset"]),
                let period = map["period"].flatMap({ duration($0, for: "`period`") }),
                let amplitude = map["amplitude"].flatMap({ number($0, for: "`amplitude`") }),
                let offset = map["offset"].flatMap({ number($0, for: "`offset`") })
            else { return nil }
            // The wave's extremes must fit the field (rounded, as the emulation rounds integer fields).
            for extreme in [offset - abs(amplitude), offset + abs(amplitude)] {
                let value: FieldValue = field.type.isInteger ? .real(extreme.rounded()) : .real(extreme)
                do {
                    _ = try ValueLayout.encode(value, as: field)
                } catch {
                    report(body, "the wave reaches \(extreme): " + error.description)
                    return nil
                }
            }
            return .sine(period: period, amplitude: amplitude, offset: offset)
        default:  // replay
            guard let map = fields(body, in: "`replay`", allowed: ["file", "column"], required: ["file"]),
                let file = map["file"].flatMap({ string($0, for: "`file`") })
            else { return nil }
            let column = map["column"].flatMap { string($0, for: "`column`") }
            return .replay(file: file, column: column)
        }
    }

    /// A constant or sequence value: the field's spelling, or `{hex}`/`{text}` bytes for the whole value.
    private mutating func generatorValue(_ node: YAMLNode, field: FieldSpec?, maximumLength: Int) -> FieldValue? {
        if let field { return fieldValue(node, as: field) }
        guard let bytes = valueBytes(node, for: "generated value") else { return nil }
        guard bytes.count <= maximumLength else {
            report(node, "generated value is \(bytes.count) bytes, over `max-length` \(maximumLength)")
            return nil
        }
        return .bytes(bytes)
    }

    /// The field, when it holds a number; numeric generators need one.
    private mutating func numericField(_ field: FieldSpec?, generator: String, at node: YAMLNode) -> FieldSpec? {
        guard let field else {
            report(node, "`\(generator)` produces numbers, so it needs a typed field: use `fields` in the schedule")
            return nil
        }
        guard field.type.isNumeric else {
            report(node, "`\(generator)` produces numbers, but field `\(field.name)` is \(field.type.name)")
            return nil
        }
        return field
    }

    /// A number that fits the field's type.
    private mutating func fitting(_ node: YAMLNode, field: FieldSpec) -> Double? {
        guard let value = number(node, for: "field `\(field.name)`") else { return nil }
        do {
            _ = try ValueLayout.encode(.real(value), as: field)
        } catch {
            report(node, error.description)
            return nil
        }
        return value
    }

    // MARK: Write rules

    private mutating func decodeWriteRule(_ node: YAMLNode) -> WriteRule? {
        guard
            let map = fields(
                node, in: "write rule", allowed: ["characteristic", "actions"], required: ["characteristic", "actions"]),
            let at = map["characteristic"], let target = lookUpCharacteristic(at, for: "write rule `characteristic`"),
            let list = map["actions"].flatMap({ sequence($0, in: "`actions`") })
        else { return nil }
        let id = target.characteristic.id
        var isValid = true
        if target.characteristic.properties.isDisjoint(with: .anyWrite) {
            report(at, "characteristic `\(id)` cannot be written (no write property)")
            isValid = false
        }
        var actions: [WriteAction] = []
        for item in list {
            if let action = decodeWriteAction(item, on: target.characteristic) {
                actions.append(action)
                if case .validate = action { declared[id]?.writeErrorSources.append("the `validate` action") }
            } else {
                isValid = false
            }
        }
        return isValid ? WriteRule(characteristicID: id, actions: actions) : nil
    }

    private mutating func decodeWriteAction(_ node: YAMLNode, on written: Characteristic) -> WriteAction? {
        let names = ["store", "echo", "validate", "set", "reply"]
        if node.scalar != nil {
            guard let name = choice(node, for: "write action", from: names) else { return nil }
            switch name {
            case "store": return .store
            case "echo":
                guard !written.properties.isDisjoint(with: .anyUpdate) else {
                    report(
                        node, "`echo` notifies the written value, but `\(written.id)` neither notifies nor indicates")
                    return nil
                }
                return .echo
            default:
                report(node, "write action `\(name)` takes parameters: `\(name): {...}`")
                return nil
            }
        }
        guard let (name, body) = tagged(node, in: "write action", allowed: ["validate", "set", "reply"]) else {
            return nil
        }
        switch name {
        case "validate":
            guard
                let map = fields(
                    body, in: "`validate`", allowed: ["length", "allowed", "range", "error"],
                    required: ["error"])
            else { return nil }
            let error = map["error"].flatMap { attError($0, on: .write) }
            let checks = ["length", "allowed", "range"].filter { map[$0] != nil }
            guard checks.count == 1, let check = checks.first, let checkNode = map[check] else {
                report(body, "`validate` takes exactly one of `length`, `allowed` or `range`")
                return nil
            }
            var decoded: WriteCheck?
            switch check {
            case "length":
                if let (low, high) = bounds(checkNode, for: "`length`") {
                    let limit = Double(Characteristic.maximumValueLength)
                    if low >= 0, high <= limit, low == low.rounded(), high == high.rounded() {
                        decoded = .length(Int(low)...Int(high))
                    } else {
                        report(checkNode, "`length` bounds are whole numbers of bytes within 0...\(Int(limit))")
                    }
                }
            case "allowed":
                if let items = sequence(checkNode, in: "`allowed`") {
                    let values = items.compactMap { valueBytes($0, for: "allowed value") }
                    if values.count == items.count { decoded = .allowedValues(values) }
                }
            default:
                if let (low, high) = bounds(checkNode, for: "`range`") { decoded = .range(low...high) }
            }
            guard let decoded, let error else { return nil }
            return .validate(decoded, error: error)
        case "set":
            guard
                let map = fields(
                    body, in: "`set`", allowed: ["characteristic", "field", "rate-per-second"],
                    required: ["characteristic"]),
                let at = map["characteristic"], let target = lookUpCharacteristic(at, for: "`set` target")
            else { return nil }
            var field: String?
            if let fieldNode = map["field"] {
                guard let name = string(fieldNode, for: "`field`") else { return nil }
                guard let layout = target.characteristic.layout, layout.index(of: name) != nil else {
                    report(
                        fieldNode, "characteristic `\(target.characteristic.id)` has no field `\(name)`",
                        hint: EditDistance.hint(for: name, in: target.characteristic.layout?.fields.map(\.name) ?? []))
                    return nil
                }
                field = name
            }
            var rate: Double?
            if let rateNode = map["rate-per-second"] {
                guard let value = number(rateNode, for: "`rate-per-second`") else { return nil }
                guard value > 0 else {
                    report(rateNode, "`rate-per-second` must be above zero")
                    return nil
                }
                rate = value
            }
            return .set(characteristicID: target.characteristic.id, field: field, ratePerSecond: rate)
        default:  // reply
            guard
                let map = fields(
                    body, in: "`reply`", allowed: ["characteristic", "value"],
                    required: ["characteristic", "value"]),
                let at = map["characteristic"], let target = lookUpCharacteristic(at, for: "`reply` target"),
                let value = map["value"].flatMap({ valueBytes($0, for: "reply `value`") })
            else { return nil }
            guard !target.characteristic.properties.isDisjoint(with: .anyUpdate) else {
                report(at, "`reply` notifies, but `\(target.characteristic.id)` neither notifies nor indicates")
                return nil
            }
            return .reply(characteristicID: target.characteristic.id, value: value)
        }
    }

    /// `{min: 1, max: 4}`, with min at most max.
    private mutating func bounds(_ node: YAMLNode, for what: String) -> (Double, Double)? {
        guard let map = fields(node, in: what, allowed: ["min", "max"], required: ["min", "max"]),
            let low = map["min"].flatMap({ number($0, for: "`min`") }),
            let high = map["max"].flatMap({ number($0, for: "`max`") })
        else { return nil }
        guard low <= high else {
            report(node, "`min` \(low) is above `max` \(high)")
            return nil
        }
        return (low, high)
    }

    /// An ATT error by key (`value-not-allowed`) or code (`0x80`), answering `operation` (nil: either). Warns when
    /// bluetoothd cannot carry it: the central would receive another code (`ATTError.deliveredThroughBlueZ`).
    private mutating func attError(_ node: YAMLNode, on operation: AttributeOperation?) -> ATTError? {
        guard let text = string(node, for: "`error`") else { return nil }
        guard let error = ATTError(name: text) else {
            report(
                node, "unknown ATT error `\(EditDistance.echo(text))`",
                hint: EditDistance.hint(for: text, in: ATTError.named.map(\.key))
                    ?? "use a name such as `value-not-allowed` or a code such as `0x80`")
            return nil
        }
        let operations: [AttributeOperation] = operation.map { [$0] } ?? [.read, .write]
        if let delivered = operations.map({ error.deliveredThroughBlueZ(on: $0) }).first(where: { $0 != error }) {
            warn(
                node.mark,
                "bluetoothd cannot send \(error) to a central: it arrives as \(delivered) (BlueZ 5.66-5.82, "
                    + "src/gatt-database.c dbus_error_to_att_ecode)",
                hint:
                    "use an application error (0x80-0x9F), or one bluetoothd carries (docs/bluez.md: Errors an application can send)"
            )
        }
        return error
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
