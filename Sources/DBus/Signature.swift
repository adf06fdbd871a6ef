internal import CDBus

/// A D-Bus type signature such as `a{sv}`. Literals are not checked when written; every signature is validated
/// before libdbus sees it (libdbus aborts the process on an invalid one), and an invalid one is a `MarshalError`.
public struct Signature: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The signature text.
    public let rawValue: String

    /// Wraps a signature without checking it; use `init(validating:)` for text from outside.
    public init(stringLiteral value: String) { rawValue = value }

    /// Wraps a signature without checking it; it is validated where it is used.
    init(unchecked value: String) { rawValue = value }

    /// Checks `text` with libdbus's validator; throws `MarshalError.invalidValue` when it is not a signature.
    public init(validating text: String) throws(MarshalError) {
        guard Signature.isValid(text, single: false) else {
            throw .invalidValue("invalid signature '\(text)'")
        }
        rawValue = text
    }

    /// The empty signature (no arguments).
    public static let empty: Signature = ""

    /// Whether the text is a valid sequence of complete types.
    public var isValid: Bool { Signature.isValid(rawValue, single: false) }

    /// Whether the text is exactly one valid complete type (what an array element or variant holds).
    public var isSingleCompleteType: Bool { Signature.isValid(rawValue, single: true) }

    /// The first type code, or nil for the empty signature.
    public var first: TypeCode? { rawValue.utf8.first.map(TypeCode.init(rawValue:)) }

    /// The signature split into its complete types (`"sa{sv}i"` -> `s`, `a{sv}`, `i`); garbage in, garbage out.
    public var completeTypes: [Signature] {
        let bytes = Array(rawValue.utf8)
        var result: [Signature] = []
        var index = 0
        while index < bytes.count {
            let end = Signature.endOfCompleteType(bytes, from: index)
            result.append(Signature(unchecked: String(decoding: bytes[index..<end], as: UTF8.self)))
            index = end
        }
        return result
    }

    /// The signature text.
    public var description: String { rawValue }

    /// One past the last byte of the complete type starting at `start`.
    private static func endOfCompleteType(_ bytes: [UInt8], from start: Int) -> Int {
        guard start < bytes.count else { return start }
        switch bytes[start] {
        case UInt8(ascii: "a"): return endOfCompleteType(bytes, from: start + 1)
        case UInt8(ascii: "("), UInt8(ascii: "{"):
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "("), UInt8(ascii: "{"): depth += 1
                case UInt8(ascii: ")"), UInt8(ascii: "}"): depth -= 1
                default: break
                }
                index += 1
                if depth == 0 { return index }
            }
            return index
        default: return start + 1
        }
    }

    private static func isValid(_ text: String, single: Bool) -> Bool {
        guard !text.utf8.contains(0) else { return false }
        return text.withCString { pointer in
            single ? dbus_signature_validate_single(pointer, nil) != 0 : dbus_signature_validate(pointer, nil) != 0
        }
    }
}
