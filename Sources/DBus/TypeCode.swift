/// One character of a D-Bus signature (D-Bus Specification, "Type System"): libdbus spells these as
/// `DBUS_TYPE_*` macros that Swift cannot import, so they are spelled here once.
public struct TypeCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The ASCII code of the type character; any byte is accepted, validity is checked where it is used.
    public let rawValue: UInt8

    /// Wraps an ASCII type code; an unknown code fails later, when a signature containing it is validated.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Wraps a type character such as `"y"`; a non-ASCII scalar is truncated to its low byte (and then invalid).
    public init(_ character: Unicode.Scalar) { rawValue = UInt8(truncatingIfNeeded: character.value) }

    /// `y`, an unsigned byte.
    public static let byte = TypeCode("y")
    /// `b`, a boolean (marshalled as 32 bits).
    public static let boolean = TypeCode("b")
    /// `n`, a signed 16-bit integer.
    public static let int16 = TypeCode("n")
    /// `q`, an unsigned 16-bit integer.
    public static let uint16 = TypeCode("q")
    /// `i`, a signed 32-bit integer.
    public static let int32 = TypeCode("i")
    /// `u`, an unsigned 32-bit integer.
    public static let uint32 = TypeCode("u")
    /// `x`, a signed 64-bit integer.
    public static let int64 = TypeCode("x")
    /// `t`, an unsigned 64-bit integer.
    public static let uint64 = TypeCode("t")
    /// `d`, an IEEE 754 double.
    public static let double = TypeCode("d")
    /// `s`, a UTF-8 string without NUL characters.
    public static let string = TypeCode("s")
    /// `o`, an object path.
    public static let objectPath = TypeCode("o")
    /// `g`, a signature.
    public static let signature = TypeCode("g")
    /// `h`, a unix file descriptor (an index into the message's fd list on the wire).
    public static let unixFD = TypeCode("h")
    /// `a`, an array; followed by one complete element type.
    public static let array = TypeCode("a")
    /// `v`, a variant.
    public static let variant = TypeCode("v")
    /// `r`, the code libdbus uses for a struct container (`(...)` in signatures).
    public static let structure = TypeCode("r")
    /// `e`, the code libdbus uses for a dict entry container (`{...}` in signatures).
    public static let dictEntry = TypeCode("e")
    /// `\0`, what libdbus returns at the end of a message's arguments.
    static let invalid = TypeCode(rawValue: 0)

    /// Whether this is a basic type (allowed as a dictionary key).
    public var isBasic: Bool {
        switch self {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string, .objectPath,
            .signature, .unixFD:
            true
        default: false
        }
    }

    /// The value libdbus's C API takes for this type code.
    var cValue: Int32 { Int32(rawValue) }

    /// The type character itself.
    public var description: String { String(UnicodeScalar(rawValue)) }
}
