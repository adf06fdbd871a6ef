/// One D-Bus value of any type BlueZ uses. Reading a message yields `ay` as `.bytes` and dictionaries as
/// `.dictionary`; appending checks the whole value first, so a malformed one is a `MarshalError`, never a crash.
public indirect enum DBusValue: Hashable, Sendable {
    /// `y`
    case byte(UInt8)
    /// `b`
    case boolean(Bool)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `s`; a string containing NUL cannot be marshalled.
    case string(String)
    /// `o`; must be a valid path to be marshalled.
    case objectPath(ObjectPath)
    /// `g`; must be a valid signature to be marshalled.
    case signature(Signature)
    /// `h`; see `UnixFD` for who owns the descriptor.
    case unixFD(UnixFD)
    /// `ay`, marshalled in one copy (the fast path for GATT values).
    case bytes([UInt8])
    /// `a<element>`; every item must have signature `element` (so empty arrays keep their type).
    case array(element: Signature, [DBusValue])
    /// `a{<key><value>}`; `key` must be a basic type and every entry must match both signatures.
    case dictionary(key: Signature, value: Signature, [DictionaryEntry])
    /// `(...)`; must hold at least one field.
    case structure([DBusValue])
    /// `v`
    case variant(DBusValue)

    /// One key-value pair of a `.dictionary`, in the order it is marshalled.
    public struct DictionaryEntry: Hashable, Sendable {
        /// The key; must be a basic type.
        public var key: DBusValue
        /// The value.
        public var value: DBusValue
        /// Pairs a key with a value; types are checked when the dictionary is marshalled.
        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's signature as its shape implies; a malformed container still gets one (checked on append).
    public var signature: Signature {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .bytes: "ay"
        case .array(let element, _): Signature(unchecked: "a" + element.rawValue)
        case .dictionary(let key, let value, _): Signature(unchecked: "a{" + key.rawValue + value.rawValue + "}")
        case .structure(let fields): Signature(unchecked: "(" + fields.map(\.signature.rawValue).joined() + ")")
        case .variant: "v"
        }
    }

    /// An `a{sv}` ("vardict", as GLib calls it) from a Swift dictionary, keys sorted so output is deterministic;
    /// each value is wrapped in a variant. Cannot fail; invalid values fail when marshalled.
    public static func vardict(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: "s", value: "v",
            entries.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .variant($0.value)) })
    }

    /// An `as` from Swift strings. Cannot fail; strings containing NUL fail when marshalled.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: "s", values.map(DBusValue.string))
    }
}

extension DBusValue {
    /// Throws `MarshalError.typeMismatch` unless the value's signature is `expected`; variants are not unwrapped.
    private func mismatch(_ expected: Signature) -> MarshalError {
        .typeMismatch(expected: expected, actual: signature)
    }

    /// The payload of a `.byte`; throws `MarshalError.typeMismatch` for any other type.
    public func asByte() throws(MarshalError) -> UInt8 {
        guard case .byte(let v) = self else { throw mismatch("y") }
        return v
    }
    /// The payload of a `.boolean`; throws `MarshalError.typeMismatch` for any other type.
    public func asBool() throws(MarshalError) -> Bool {
        guard case .boolean(let v) = self else { throw mismatch("b") }
        return v
    }
    /// The payload of a `.int16`; throws `MarshalError.typeMismatch` for any other type.
    public func asInt16() throws(MarshalError) -> Int16 {
        guard case .int16(let v) = self else { throw mismatch("n") }
        return v
    }
    /// The payload of a `.uint16`; throws `MarshalError.typeMismatch` for any other type.
    public func asUInt16() throws(MarshalError) -> UInt16 {
        guard case .uint16(let v) = self else { throw mismatch("q") }
        return v
    }
    /// The payload of a `.int32`; throws `MarshalError.typeMismatch` for any other type.
    public func asInt32() throws(MarshalError) -> Int32 {
        guard case .int32(let v) = self else { throw mismatch("i") }
        return v
    }
    /// The payload of a `.uint32`; throws `MarshalError.typeMismatch` for any other type.
    public func asUInt32() throws(MarshalError) -> UInt32 {
        guard case .uint32(let v) = self else { throw mismatch("u") }
        return v
    }
    /// The payload of a `.int64`; throws `MarshalError.typeMismatch` for any other type.
    public func asInt64() throws(MarshalError) -> Int64 {
        guard case .int64(let v) = self else { throw mismatch("x") }
        return v
    }
    /// The payload of a `.uint64`; throws `MarshalError.typeMismatch` for any other type.
    public func asUInt64() throws(MarshalError) -> UInt64 {
        guard case .uint64(let v) = self else { throw mismatch("t") }
        return v
    }
    /// The payload of a `.double`; throws `MarshalError.typeMismatch` for any other type.
    public func asDouble() throws(MarshalError) -> Double {
        guard case .double(let v) = self else { throw mismatch("d") }
        return v
    }
    /// The payload of a `.string`; throws `MarshalError.typeMismatch` for any other type.
    public func asString() throws(MarshalError) -> String {
        guard case .string(let v) = self else { throw mismatch("s") }
        return v
    }
    /// The payload of a `.objectPath`; throws `MarshalError.typeMismatch` for any other type.
    public func asObjectPath() throws(MarshalError) -> ObjectPath {
        guard case .objectPath(let v) = self else { throw mismatch("o") }
        return v
    }
    /// The payload of a `.signature`; throws `MarshalError.typeMismatch` for any other type.
    public func asSignature() throws(MarshalError) -> Signature {
        guard case .signature(let v) = self else { throw mismatch("g") }
        return v
    }
    /// The payload of a `.unixFD` (the caller owns it); throws `MarshalError.typeMismatch` for any other type.
    public func asUnixFD() throws(MarshalError) -> UnixFD {
        guard case .unixFD(let v) = self else { throw mismatch("h") }
        return v
    }
    /// The bytes of an `ay` (either spelling); throws `MarshalError.typeMismatch` for any other type.
    public func asBytes() throws(MarshalError) -> [UInt8] {
        switch self {
        case .bytes(let v): return v
        case .array(element: "y", let items): return try items.map { v throws(MarshalError) in try v.asByte() }
        default: throw mismatch("ay")
        }
    }
    /// The items of any array (`ay` as `.byte`s); throws `MarshalError.typeMismatch` for a non-array.
    public func asArray() throws(MarshalError) -> [DBusValue] {
        switch self {
        case .bytes(let v): return v.map(DBusValue.byte)
        case .array(_, let items): return items
        default: throw MarshalError.typeMismatch(expected: "a*", actual: signature)
        }
    }
    /// The strings of an `as`; throws `MarshalError.typeMismatch` for any other type.
    public func asStrings() throws(MarshalError) -> [String] {
        guard case .array(element: "s", let items) = self else { throw mismatch("as") }
        return try items.map { v throws(MarshalError) in try v.asString() }
    }
    /// The fields of a struct; throws `MarshalError.typeMismatch` for any other type.
    public func asStructure() throws(MarshalError) -> [DBusValue] {
        guard case .structure(let fields) = self else { throw MarshalError.typeMismatch(expected: "(*)", actual: signature) }
        return fields
    }
    /// The content of a variant; throws `MarshalError.typeMismatch` for any other type.
    public func asVariant() throws(MarshalError) -> DBusValue {
        guard case .variant(let v) = self else { throw mismatch("v") }
        return v
    }
    /// An `a{sv}` as a Swift dictionary with the variants unwrapped (a later duplicate key wins);
    /// throws `MarshalError.typeMismatch` for any other type.
    public func asVardict() throws(MarshalError) -> [String: DBusValue] {
        guard case .dictionary(key: "s", value: "v", let entries) = self else { throw mismatch("a{sv}") }
        var result: [String: DBusValue] = [:]
        for entry in entries { result[try entry.key.asString()] = try entry.value.asVariant() }
        return result
    }
    /// Any dictionary's entries in wire order; throws `MarshalError.typeMismatch` for a non-dictionary.
    public func asEntries() throws(MarshalError) -> [DictionaryEntry] {
        guard case .dictionary(_, _, let entries) = self else {
            throw MarshalError.typeMismatch(expected: "a{**}", actual: signature)
        }
        return entries
    }
}
