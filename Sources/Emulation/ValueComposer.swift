import GATTModel
import GATTProfile

/// Builds a characteristic's next value from its generators: generated fields replace theirs, the other fields
/// (a Heart Rate Measurement's flags, say) keep their current bytes, and `ValueLayout.encode` lays them out.
///
/// Generated numbers are made to fit rather than refused, because a schedule must not stop mid-run: integers are
/// rounded (a counter may step by 1.5), and values beyond the field's type are clamped to it with a warning.
public struct ValueComposer: Sendable {
    /// A new value and what had to be adjusted to produce it.
    public struct Composition: Hashable, Sendable {
        /// The encoded value.
        public var value: [UInt8]
        /// One line per field that was clamped or could not take its generated value; empty when all fitted.
        public var warnings: [String]
    }

    private struct Binding: Sendable {
        /// The field's index in the layout; nil for the whole value.
        var index: Int?
        var state: GeneratorState
    }

    /// The characteristic whose value this composes.
    public let characteristicID: String
    private let layout: ValueLayout?
    private var bindings: [Binding]
    /// Fields already warned about: a clamped walk would otherwise log the same line every tick.
    private var warnedFields: Set<String> = []

    /// A composer for a characteristic's generators. Throws `BehaviourError` when a generator names a field the
    /// layout lacks, or a replay file cannot be loaded.
    public init(
        characteristic: Characteristic, generators: [FieldGenerator], baseDirectory: String? = nil
    )
        throws(BehaviourError)
    {
        characteristicID = characteristic.id
        layout = characteristic.layout
        var bindings: [Binding] = []
        for generator in generators {
            var index: Int?
            if let field = generator.field {
                guard let found = characteristic.layout?.index(of: field) else {
                    throw .unknownField(characteristicID: characteristic.id, field: field)
                }
                index = found
            }
            let state = try GeneratorState(generator.generator, baseDirectory: baseDirectory)
            // Hex rows are whole values: each must fit the characteristic as a written value would.
            if index == nil, case .replay(let replay) = generator.generator {
                let lengths = (state.replayValues ?? []).map { value in
                    if case .bytes(let bytes) = value { bytes.count } else { 0 }
                }
                if let row = lengths.firstIndex(where: { $0 > characteristic.maximumLength }) {
                    throw .replay(
                        file: replay.file, line: 0,
                        message: "data row \(row + 1) is \(lengths[row]) bytes, over `max-length` "
                            + "\(characteristic.maximumLength) of `\(characteristic.id)`")
                }
            }
            bindings.append(Binding(index: index, state: state))
        }
        self.bindings = bindings
    }

    /// Lets the generators of `field` go on from `value` (`GeneratorState.rebase`).
    public mutating func rebase(_ field: String, to value: Double) {
        guard let index = layout?.index(of: field) else { return }
        for position in bindings.indices where bindings[position].index == index {
            bindings[position].state.rebase(to: value)
        }
    }

    /// For a schedule paced by its recording: when the next row is due after `elapsed` (since the schedule
    /// started); nil when the recording is over or the value has no replay.
    public func nextRecordedTime(after elapsed: Duration) -> Duration? {
        bindings.first { $0.index == nil }?.state.nextRecordedTime(after: elapsed)
    }

    /// Advances every generator once and returns the new value built on `current`; `state` is the device's state,
    /// which a `follow` generator moves toward.
    public mutating func next(
        current: [UInt8], at elapsed: Duration, state: [String: FieldValue] = [:]
    ) -> Composition {
        var whole: FieldValue?
        var updates: [(index: Int, value: FieldValue)] = []
        for position in bindings.indices {
            let value = bindings[position].state.next(at: elapsed, state: state)
            if let index = bindings[position].index { updates.append((index, value)) } else { whole = value }
        }
        var composition: Composition
        if let whole {
            composition = Self.wholeValue(whole, current: current, layout: layout)
        } else if let layout {
            composition = Self.compose(updates, into: current, layout: layout)
        } else {
            composition = Composition(value: current, warnings: [])
        }
        composition.warnings = composition.warnings.filter { warnedFields.insert($0).inserted }
        return composition
    }

    /// Replaces some fields of `current` and re-encodes it; fields that cannot be decoded from `current` (an
    /// empty initial value) start from zero, no flags, or empty.
    public static func compose(
        _ updates: [(index: Int, value: FieldValue)], into current: [UInt8], layout: ValueLayout
    )
        -> Composition
    {
        var values = layout.decode(current) ?? layout.fields.map { zero(of: $0.type) }
        var warnings: [String] = []
        for (index, value) in updates where layout.fields.indices.contains(index) {
            let (fitted, warning) = fit(value, to: layout.fields[index], keeping: values[index])
            values[index] = fitted
            if let warning { warnings.append(warning) }
        }
        do {
            return Composition(value: try layout.encode(values), warnings: warnings)
        } catch {
            // `fit` makes every value encodable; should a type still refuse one, the old value stays.
            return Composition(value: current, warnings: warnings + ["cannot encode: \(error)"])
        }
    }

    /// Makes a value encodable as a field: rounds and clamps numbers, converts numbers for flags and booleans.
    /// Returns the previous value and a warning when the kinds do not match at all (text for an integer).
    static func fit(_ value: FieldValue, to spec: FieldSpec, keeping previous: FieldValue) -> (FieldValue, String?) {
        let mismatch = (previous, "`\(spec.name)`: generated \(value) does not fit \(spec.type.name); value kept")
        switch spec.type {
        case .unsigned(let count), .signed(let count):
            guard let number = value.number, !number.isNaN else { return mismatch }
            let bits = Double(count * 8)
            let isSigned = if case .signed = spec.type { true } else { false }
            let range = isSigned ? -pow2(bits - 1)...(pow2(bits - 1) - 1) : 0...(pow2(bits) - 1)
            return clamp(number.rounded(), to: range, spec) { .integer(Int64($0)) }
        case .flags(let count, _):
            if case .flags = value { return (value, nil) }
            guard let number = value.number, !number.isNaN else { return mismatch }
            return clamp(number.rounded(), to: 0...(pow2(Double(count * 8)) - 1), spec) { .integer(Int64($0)) }
        case .float32:
            guard let number = value.number else { return mismatch }
            let largest = Double(Float.greatestFiniteMagnitude)
            return number.isFinite ? clamp(number, to: -largest...largest, spec) { .real($0) } : (.real(number), nil)
        case .sfloat, .medfloat:
            guard let number = value.number else { return mismatch }
            let largest = (spec.type == .sfloat ? MedicalFloat.Format.sfloat : .float).largestMagnitude
            return number.isFinite ? clamp(number, to: -largest...largest, spec) { .real($0) } : (.real(number), nil)
        case .boolean:
            if case .boolean = value { return (value, nil) }
            guard let number = value.number else { return mismatch }
            return (.boolean(number != 0), nil)
        case .utf8:
            if case .text = value { return (value, nil) }
            if case .bytes(let bytes) = value { return (.text(String(decoding: bytes, as: UTF8.self)), nil) }
            return mismatch
        case .bytes:
            if case .bytes = value { return (value, nil) }
            if case .text(let text) = value { return (.bytes(Array(text.utf8)), nil) }
            return mismatch
        }
    }

    private static func wholeValue(_ value: FieldValue, current: [UInt8], layout: ValueLayout?) -> Composition {
        switch value {
        case .bytes(let bytes): return Composition(value: bytes, warnings: [])
        case .text(let text): return Composition(value: Array(text.utf8), warnings: [])
        default:
            // A number for the whole value only makes sense when the value is a single field.
            if let layout, layout.fields.count == 1 { return compose([(0, value)], into: current, layout: layout) }
            return Composition(value: current, warnings: ["generated \(value) is not bytes or text; value kept"])
        }
    }

    private static func clamp(
        _ number: Double, to range: ClosedRange<Double>, _ spec: FieldSpec, _ make: (Double) -> FieldValue
    ) -> (FieldValue, String?) {
        if range.contains(number) { return (make(number), nil) }
        let clamped = min(max(number, range.lowerBound), range.upperBound)
        return (make(clamped), "`\(spec.name)`: generated values beyond \(spec.type.name) are clamped to \(range)")
    }

    static func zero(of type: FieldType) -> FieldValue {
        switch type {
        case .unsigned, .signed: .integer(0)
        case .float32, .sfloat, .medfloat: .real(0)
        case .boolean: .boolean(false)
        case .flags: .flags([])
        case .utf8: .text("")
        case .bytes: .bytes([])
        }
    }

    private static func pow2(_ bits: Double) -> Double { Double(sign: .plus, exponent: Int(bits), significand: 1) }
}
