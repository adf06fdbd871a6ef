/// The encoding of one typed field of a characteristic value. All multi-byte fields are little-endian
/// (Core Spec Vol 3, Part G, 3.3.3.5 via the Presentation Format's format types).
public enum FieldType: Hashable, Sendable {
    /// An unsigned integer of 1, 2, 3 or 4 bytes.
    case unsigned(bytes: Int)
    /// A two's-complement signed integer of 1, 2, 3 or 4 bytes.
    case signed(bytes: Int)
    /// An IEEE 754 binary32.
    case float32
    /// IEEE 11073-20601 SFLOAT: 4-bit exponent, 12-bit mantissa.
    case sfloat
    /// IEEE 11073-20601 FLOAT: 8-bit exponent, 24-bit mantissa.
    case medfloat
    /// One byte, 0 or 1.
    case boolean
    /// A bit field of 1, 2 or 4 bytes whose bits have names.
    case flags(bytes: Int, bits: [FlagBit])
    /// UTF-8 text; variable length, so only last in a layout.
    case utf8
    /// Raw bytes; variable length, so only last in a layout.
    case bytes

    /// The profile spellings of the types that take no parameters, e.g. `u16`, `sfloat`.
    public static let simpleNames: [(type: FieldType, name: String)] = [
        (.unsigned(bytes: 1), "u8"), (.unsigned(bytes: 2), "u16"), (.unsigned(bytes: 3), "u24"),
        (.unsigned(bytes: 4), "u32"), (.signed(bytes: 1), "s8"), (.signed(bytes: 2), "s16"),
        (.signed(bytes: 3), "s24"), (.signed(bytes: 4), "s32"), (.float32, "float32"), (.sfloat, "sfloat"),
        (.medfloat, "float"), (.boolean, "bool"), (.utf8, "utf8"), (.bytes, "hex"),
    ]

    /// The profile spellings of the flag types, by byte width.
    public static let flagNames: [(bytes: Int, name: String)] = [(1, "flags8"), (2, "flags16"), (4, "flags32")]

    /// The profile spelling of the type.
    public var name: String {
        if case .flags(let bytes, _) = self {
            return Self.flagNames.first { $0.bytes == bytes }?.name ?? "flags"
        }
        return Self.simpleNames.first { $0.type == self }?.name ?? "?"
    }

    /// The fixed size in bytes, or nil for variable-length types.
    public var byteCount: Int? {
        switch self {
        case .unsigned(let bytes), .signed(let bytes), .flags(let bytes, _): bytes
        case .float32, .medfloat: 4
        case .sfloat: 2
        case .boolean: 1
        case .utf8, .bytes: nil
        }
    }
}

/// A named bit of a flags field.
public struct FlagBit: Hashable, Sendable {
    /// The bit's name, e.g. `sensor-contact-detected`.
    public var name: String
    /// Its position, 0 being the least significant bit.
    public var bit: Int
    /// A bit from its parts.
    public init(name: String, bit: Int) {
        self.name = name
        self.bit = bit
    }
}

/// The value of one typed field.
public enum FieldValue: Hashable, Sendable {
    /// An integer (for integer and flags fields).
    case integer(Int64)
    /// A real number (for float fields; integers also accept a whole real).
    case real(Double)
    /// A boolean.
    case boolean(Bool)
    /// The names of the set bits of a flags field.
    case flags([String])
    /// Text.
    case text(String)
    /// Raw bytes.
    case bytes([UInt8])

    /// The value as a number, when it is one.
    public var number: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .real(let value): value
        case .boolean(let value): value ? 1 : 0
        default: nil
        }
    }
}

/// A field of a layout: a name and a type.
public struct FieldSpec: Hashable, Sendable {
    /// The field's name, unique in its layout.
    public var name: String
    /// How it is encoded.
    public var type: FieldType
    /// A field from its parts.
    public init(name: String, type: FieldType) {
        self.name = name
        self.type = type
    }
}

/// Why a field value cannot be encoded.
public enum FieldError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The value is outside what the type can hold; `range` says what it can ("0 to 255"), when it is a range.
    case outOfRange(field: String, value: String, type: String, range: String? = nil)
    /// A fractional number for an integer type.
    case notWhole(field: String, value: String, type: String, range: String)
    /// The value's kind does not fit the type (text for an integer, say).
    case kindMismatch(field: String, type: String)
    /// A flag name the field does not define.
    case unknownFlag(field: String, flag: String)
    /// The layout and the values do not line up.
    case countMismatch(expected: Int, got: Int)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .outOfRange(let field, let value, let type, let range):
            "`\(field)`: \(value) does not fit in \(Self.article(type)) \(type)" + (range.map { " (\($0))" } ?? "")
        case .notWhole(let field, let value, let type, let range):
            "`\(field)`: \(value) is not \(Self.article(type)) \(type): an integer from \(range)"
        case .kindMismatch(let field, let type): "`\(field)`: value is not \(Self.article(type)) \(type)"
        case .unknownFlag(let field, let flag): "`\(field)`: unknown flag `\(flag)`"
        case .countMismatch(let expected, let got): "expected \(expected) field values, got \(got)"
        }
    }

    /// "a" or "an" as the type's name is read aloud: "an s16", "an f32", "a u8", "a flags8".
    static func article(_ type: String) -> String {
        guard let first = type.lowercased().first else { return "a" }
        return "aefhilmnorsx".contains(first) && !type.lowercased().hasPrefix("uint") ? "an" : "a"
    }
}
