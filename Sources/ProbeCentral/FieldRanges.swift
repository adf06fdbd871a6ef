import GATTModel
import GATTProfile

/// The ranges a profile's behaviour keeps each typed field in, for `blemu verify`: what its schedules' generators
/// can produce (a counter's or random walk's `min`/`max`, a sine's offset plus or minus its amplitude, the values a
/// sequence or constant names), and for a value a central writes, the range its rule validates before storing it.
/// A field a write rule sets (a temperature a set point moves), or a value a write rule sets or replies with whole,
/// has no range here: a write may take it anywhere.
struct FieldRanges {
    /// The range of each field, by characteristic id and field name.
    private var ranges: [String: [String: ClosedRange<Double>]] = [:]

    /// The ranges `profile` declares, widened to each field's initial value (what a read gets before the first
    /// tick). A characteristic a central can write has only its rule's validated range, and only when nothing else
    /// (a schedule, another rule) changes it.
    init(_ profile: PeripheralProfile) {
        // What write rules change: a field (`set` with a field), or a whole value (`set` without one, `reply`).
        var written: Set<String> = []
        var rewritten: Set<String> = []
        for rule in profile.behaviour.writeRules {
            for action in rule.actions {
                switch action {
                case .set(let id, let field?, _): written.insert("\(id)/\(field)")
                case .set(let id, nil, _), .reply(let id, _): rewritten.insert(id)
                case .store, .validate, .echo: break
                }
            }
        }
        for schedule in profile.behaviour.schedules where !rewritten.contains(schedule.characteristicID) {
            for generator in schedule.generators {
                guard let field = generator.field, !written.contains("\(schedule.characteristicID)/\(field)"),
                    let range = Self.range(of: generator.generator)
                else { continue }
                let id = schedule.characteristicID
                let previous = ranges[id]?[field]
                ranges[id, default: [:]][field] = previous.map { Self.union($0, range) } ?? range
            }
        }
        let scheduled = Set(profile.behaviour.schedules.map(\.characteristicID))
        for characteristic in profile.characteristics {
            if !characteristic.properties.isDisjoint(with: .anyWrite) {
                // A written value is what its rule's validation let through, when that is the only way it changes.
                ranges[characteristic.id] = nil
                guard !scheduled.contains(characteristic.id), !rewritten.contains(characteristic.id),
                    !written.contains(where: { $0.hasPrefix(characteristic.id + "/") }),
                    let rule = profile.behaviour.writeRules.first(where: { $0.characteristicID == characteristic.id }),
                    let range = Self.validatedRange(of: rule), let field = characteristic.layout?.fields.first
                else { continue }
                ranges[characteristic.id] = [field.name: range]
            }
            guard let fields = ranges[characteristic.id], let layout = characteristic.layout else {
                ranges[characteristic.id] = nil
                continue
            }
            let initial = layout.decode(characteristic.value.bytes) ?? []
            for (spec, value) in zip(layout.fields, initial) {
                guard let range = fields[spec.name], let number = value.number else { continue }
                ranges[characteristic.id]?[spec.name] = Self.union(range, number...number)
            }
        }
    }

    /// The range a rule's validation holds a stored write to: a `validate` with a range before the rule's `store`
    /// (or `echo`), which reads the value as its first typed field (`WriteCheck.number`). Nil when the rule stores
    /// without such a check.
    private static func validatedRange(of rule: WriteRule) -> ClosedRange<Double>? {
        var range: ClosedRange<Double>?
        for action in rule.actions {
            switch action {
            case .validate(.range(let allowed), _): range = range.map { $0.clamped(to: allowed) } ?? allowed
            case .store, .echo: return range
            case .validate, .set, .reply: break
            }
        }
        return nil
    }

    private static func union(_ a: ClosedRange<Double>, _ b: ClosedRange<Double>) -> ClosedRange<Double> {
        min(a.lowerBound, b.lowerBound)...max(a.upperBound, b.upperBound)
    }

    /// The numbers a generator can produce; nil when it has no bounds a central could check.
    private static func range(of generator: Generator) -> ClosedRange<Double>? {
        switch generator {
        case .counter(_, _, let range, _), .randomWalk(_, _, let range, _):
            return range
        case .sine(_, let amplitude, let offset):
            return (offset - abs(amplitude))...(offset + abs(amplitude))
        case .constant(let value):
            return value.number.map { $0...$0 }
        case .sequence(let values, _):
            let numbers = values.compactMap(\.number)
            guard numbers.count == values.count, let low = numbers.min(), let high = numbers.max() else { return nil }
            return low...high
        case .replay, .follow:
            // A recording's rows, or a state value the central's writes set: no bounds the profile states.
            return nil
        }
    }

    /// The check that every value in `values` (as the central got them) keeps `characteristic`'s fields within
    /// their ranges; nil when none of its fields has one.
    func check(
        _ values: [[UInt8]], of characteristic: Characteristic, as category: Verification.Check.Category
    ) -> Verification.Check? {
        guard let fields = ranges[characteristic.id], let layout = characteristic.layout else { return nil }
        let ranged = layout.fields.enumerated().filter { fields[$0.element.name] != nil }
        guard !ranged.isEmpty, !values.isEmpty else { return nil }
        let expected = ranged.compactMap { entry in
            fields[entry.element.name].map { "\(entry.element.name) in \(Self.text($0))" }
        }
        .joined(separator: ", ")
        var outside: [String] = []
        for bytes in values {
            guard let decoded = layout.decode(bytes) else { continue }  // the `fields` check reports these
            for (index, spec) in ranged {
                guard let number = decoded[index].number, let range = fields[spec.name] else { continue }
                // An integer field holds the generator's number rounded; a float one holds it to its precision.
                let slack: Double =
                    if case .integer = decoded[index] { 0.5 } else { 1e-3 * max(1, abs(range.upperBound)) }
                if number < range.lowerBound - slack || number > range.upperBound + slack {
                    outside.append("\(spec.name) \(Self.text(number))")
                }
            }
        }
        return Verification.Check(
            category, characteristic.id, "range", outside.isEmpty ? .pass : .fail, expected: expected,
            actual: outside.isEmpty
                ? "\(values.count) value(s) within" : "outside: " + outside.joined(separator: ", "))
    }

    private static func text(_ range: ClosedRange<Double>) -> String {
        "\(text(range.lowerBound))...\(text(range.upperBound))"
    }

    private static func text(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}
