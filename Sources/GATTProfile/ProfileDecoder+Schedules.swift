import GATTModel

/// `behaviour.schedules`: generators, intervals and start rules, checked against the declared characteristics.
extension ProfileDecoder {
    mutating func decodeSchedule(_ node: YAMLNode) -> Schedule? {
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
        var isValid = interval.map { $0 > .zero || isTransfer } ?? (map["interval"] == nil)
        if let at = map["characteristic"] {
            if refusesConstant(characteristic, at: at) { isValid = false }
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
        // Without an interval, a replay of the whole value sends each row at its recorded time; every other
        // schedule needs one.
        let isWholeReplay = generators.count == 1 && generators[0].field == nil && generators[0].generator.isReplay
        if map["interval"] == nil && !isTransfer {
            if isWholeReplay {
                interval = .zero
            } else {
                report(node, "missing key `interval` in schedule (only a `replay` of the whole value goes without)")
                isValid = false
            }
        }
        if case .replay(let replay)? = generators.first?.generator, replay.repeats, map["interval"] != nil {
            report(
                map["value"] ?? node, "`repeats` is for a replay sent at its recorded times: remove `interval`")
            isValid = false
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
        case "follow":
            guard let field = numericField(field, generator: kind, at: node),
                let map = fields(
                    body, in: "`follow`", allowed: ["state", "rate-per-second", "start"],
                    required: ["state", "rate-per-second"]),
                let stateNode = map["state"], let name = string(stateNode, for: "`state`"),
                let rate = map["rate-per-second"].flatMap({ number($0, for: "`rate-per-second`") })
            else { return nil }
            guard let variable = stateVariables[name] else {
                reportUnknown(stateNode, "state variable", name, among: Array(stateVariables.keys), declaredIn: "state")
                return nil
            }
            guard variable.type.isNumeric else {
                report(stateNode, "`follow` moves toward a number, but state `\(name)` is \(variable.type.name)")
                return nil
            }
            guard rate > 0 else {
                report(map["rate-per-second"] ?? body, "`rate-per-second` must be above zero")
                return nil
            }
            var start: Double?
            if let startNode = map["start"] {
                guard let value = fitting(startNode, field: field) else { return nil }
                start = value
            }
            return .follow(state: name, ratePerSecond: rate, start: start)
        default:  // replay
            guard
                let map = fields(
                    body, in: "`replay`", allowed: ["file", "column", "format", "repeats"], required: ["file"]),
                let file = map["file"].flatMap({ string($0, for: "`file`") })
            else { return nil }
            var replay = Replay(file: file, column: map["column"].flatMap { string($0, for: "`column`") })
            if let value = map["format"] {
                guard let name = choice(value, for: "replay format", from: Replay.Format.allCases.map(\.rawValue)),
                    let format = Replay.Format(rawValue: name)
                else { return nil }
                if format == .hex, let field {
                    report(value, "`format: hex` replays whole values; field `\(field.name)` takes numbers")
                    return nil
                }
                replay.format = format
            }
            if let value = map["repeats"] {
                guard let flag = boolean(value, for: "`repeats`") else { return nil }
                if flag, field != nil {
                    report(value, "`repeats` is for a replay of the whole value sent at its recorded times")
                    return nil
                }
                replay.repeats = flag
            }
            return .replay(replay)
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
}
