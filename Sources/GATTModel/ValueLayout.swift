/// The typed fields a characteristic value is made of, in order, so a Heart Rate Measurement can be written,
/// shown and generated as its fields rather than as hex.
public struct ValueLayout: Hashable, Sendable {
    /// The fields, in the order their bytes appear.
    public var fields: [FieldSpec]

    /// A layout from its fields.
    public init(_ fields: [FieldSpec]) { self.fields = fields }

    /// The index of a named field.
    public func index(of name: String) -> Int? { fields.firstIndex { $0.name == name } }

    /// Encodes one value per field into the value's bytes.
    ///
    /// Throws `FieldError` when the counts differ or a value does not fit its field's type.
    public func encode(_ values: [FieldValue]) throws(FieldError) -> [UInt8] {
        guard values.count == fields.count else { throw .countMismatch(expected: fields.count, got: values.count) }
        var bytes: [UInt8] = []
        for (spec, value) in zip(fields, values) {
            bytes += try Self.encode(value, as: spec)
        }
        return bytes
    }

    /// Decodes the bytes into one value per field; nil when they are too short or too long for the layout.
    public func decode(_ bytes: [UInt8]) -> [FieldValue]? {
        var rest = bytes[...]
        var values: [FieldValue] = []
        for spec in fields {
            guard let count = spec.type.byteCount else {
                values.append(spec.type == .utf8 ? .text(String(decoding: rest, as: UTF8.self)) : .bytes(Array(rest)))
                rest = []
                continue
            }
            guard rest.count >= count else { return nil }
            values.append(Self.decode(Array(rest.prefix(count)), as: spec.type))
            rest = rest.dropFirst(count)
        }
        return rest.isEmpty ? values : nil
    }

    /// Encodes one field value.
    public static func encode(_ value: FieldValue, as spec: FieldSpec) throws(FieldError) -> [UInt8] {
        let type = spec.type
        switch type {
        case .unsigned(let count), .signed(let count):
            guard let number = value.number else { throw .kindMismatch(field: spec.name, type: type.name) }
            let bits = count * 8
            let isSigned = if case .signed = type { true } else { false }
            let range: ClosedRange<Double> =
                isSigned ? -pow2(bits - 1)...(pow2(bits - 1) - 1) : 0...(pow2(bits) - 1)
            let span = "\(format(range.lowerBound)) to \(format(range.upperBound))"
            guard number == number.rounded() else {
                throw .notWhole(field: spec.name, value: format(number), type: type.name, range: span)
            }
            guard range.contains(number) else {
                throw .outOfRange(field: spec.name, value: format(number), type: type.name, range: span)
            }
            return littleEndian(UInt64(bitPattern: Int64(number)), count: count)
        case .float32:
            guard let number = value.number else { throw .kindMismatch(field: spec.name, type: type.name) }
            guard number.isNaN || abs(number) <= Double(Float.greatestFiniteMagnitude) || number.isInfinite else {
                throw .outOfRange(field: spec.name, value: format(number), type: type.name)
            }
            return littleEndian(UInt64(Float(number).bitPattern), count: 4)
        case .sfloat, .medfloat:
            guard let number = value.number else { throw .kindMismatch(field: spec.name, type: type.name) }
            let format: MedicalFloat.Format = type == .sfloat ? .sfloat : .float
            guard let raw = MedicalFloat.encode(number, as: format) else {
                throw .outOfRange(field: spec.name, value: Self.format(number), type: type.name)
            }
            return littleEndian(UInt64(raw), count: type.byteCount!)
        case .boolean:
            guard case .boolean(let flag) = value else { throw .kindMismatch(field: spec.name, type: type.name) }
            return [flag ? 1 : 0]
        case .flags(let count, let bits):
            var raw: UInt64 = 0
            switch value {
            case .flags(let names):
                for name in names {
                    guard let bit = bits.first(where: { $0.name == name }) else {
                        throw .unknownFlag(field: spec.name, flag: name)
                    }
                    raw |= 1 << UInt64(bit.bit)
                }
            case .integer(let number) where number >= 0 && Double(number) < pow2(count * 8):
                raw = UInt64(number)
            default:
                throw .kindMismatch(field: spec.name, type: type.name)
            }
            return littleEndian(raw, count: count)
        case .utf8:
            guard case .text(let text) = value else { throw .kindMismatch(field: spec.name, type: type.name) }
            return Array(text.utf8)
        case .bytes:
            guard case .bytes(let bytes) = value else { throw .kindMismatch(field: spec.name, type: type.name) }
            return bytes
        }
    }

    /// Decodes one fixed-size field from exactly its bytes.
    static func decode(_ bytes: [UInt8], as type: FieldType) -> FieldValue {
        let raw = bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << UInt64($1.offset * 8) }
        switch type {
        case .unsigned:
            return .integer(Int64(raw))
        case .signed(let count):
            let shift = UInt64(64 - count * 8)
            return .integer(Int64(bitPattern: raw << shift) >> Int64(shift))
        case .float32:
            return .real(Double(Float(bitPattern: UInt32(raw))))
        case .sfloat:
            return .real(MedicalFloat.decode(UInt32(raw), as: .sfloat))
        case .medfloat:
            return .real(MedicalFloat.decode(UInt32(raw), as: .float))
        case .boolean:
            return .boolean(raw != 0)
        case .flags(_, let bits):
            return .flags(bits.filter { raw & (1 << UInt64($0.bit)) != 0 }.map(\.name))
        case .utf8:
            return .text(String(decoding: bytes, as: UTF8.self))
        case .bytes:
            return .bytes(bytes)
        }
    }

    private static func littleEndian(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> UInt64($0 * 8)) }
    }

    private static func pow2(_ bits: Int) -> Double { Double(sign: .plus, exponent: bits, significand: 1) }

    private static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}
