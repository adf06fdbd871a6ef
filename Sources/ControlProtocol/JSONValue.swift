/// A JSON value (RFC 8259) as the control socket, the event log and state files carry it: parsed and printed here,
/// so the serving binary links no Foundation (JSONSerialization alone costs ~5 MiB of every process).
///
/// A number without a fraction or exponent that fits 64 bits is an `integer`, anything else a `real`; objects print
/// with their keys sorted, so a line is the same for the same value.
public enum JSONValue: Hashable, Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A whole number written without a fraction or exponent.
    case integer(Int64)
    /// Any other number.
    case real(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; printed with sorted keys.
    case object([String: JSONValue])

    /// Why a text is not JSON, with the byte offset where it went wrong.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// Zero-based offset into the UTF-8 text.
        public var offset: Int
        /// What was wrong there.
        public var reason: String
        /// `reason at byte N`.
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses one JSON text; whitespace may surround it, nothing else may follow it.
    public init(parsing text: String) throws(ParseError) {
        var parser = JSONParser(Array(text.utf8))
        self = try parser.document()
    }

    /// The compact text, keys sorted (`{"a":1,"b":[true,null]}`).
    public var text: String {
        var output = ""
        write(to: &output, indent: nil)
        return output
    }

    /// The text with two-space indentation and sorted keys, for files a person may read.
    public var prettyText: String {
        var output = ""
        write(to: &output, indent: "")
        return output
    }

    /// The value of `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    /// The string, when this is one.
    public var string: String? {
        if case .string(let string) = self { string } else { nil }
    }

    /// The flag, when this is `true` or `false`.
    public var bool: Bool? {
        if case .bool(let flag) = self { flag } else { nil }
    }

    /// The number as a Double, when this is a number.
    public var number: Double? {
        switch self {
        case .integer(let integer): Double(integer)
        case .real(let real): real
        default: nil
        }
    }

    /// The number when it is a whole number that fits an Int (`2` and `2.0` both are).
    public var integer: Int? {
        switch self {
        case .integer(let integer): Int(exactly: integer)
        case .real(let real): Int(exactly: real)
        default: nil
        }
    }

    /// The elements, when this is an array of strings only.
    public var strings: [String]? {
        guard let elements = array else { return nil }
        let strings = elements.compactMap(\.string)
        return strings.count == elements.count ? strings : nil
    }

    /// The elements, when this is an array.
    public var array: [JSONValue]? {
        if case .array(let elements) = self { elements } else { nil }
    }

    /// The members, when this is an object.
    public var object: [String: JSONValue]? {
        if case .object(let members) = self { members } else { nil }
    }

    /// A Double as JSON: whole values below 2^53 as integers (`3`, not `3.0`), others in Swift's shortest form that
    /// reads back to the same Double; JSON has no NaN or infinity, so those are `null`.
    public static func number(_ value: Double) -> JSONValue {
        guard value.isFinite else { return .null }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return .integer(Int64(value)) }
        return .real(value)
    }

    private func write(to output: inout String, indent: String?) {
        switch self {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .integer(let integer): output += String(integer)
        case .real(let real): output += real.isFinite ? "\(real)" : "null"
        case .string(let string): Self.quote(string, to: &output)
        case .array(let elements):
            writeContainer(elements, open: "[", close: "]", to: &output, indent: indent) { element, output, inner in
                element.write(to: &output, indent: inner)
            }
        case .object(let members):
            let sorted = members.sorted { $0.key < $1.key }
            writeContainer(sorted, open: "{", close: "}", to: &output, indent: indent) { member, output, inner in
                Self.quote(member.key, to: &output)
                output += inner == nil ? ":" : ": "
                member.value.write(to: &output, indent: inner)
            }
        }
    }

    private func writeContainer<Element>(
        _ elements: [Element], open: String, close: String, to output: inout String, indent: String?,
        element write: (Element, inout String, String?) -> Void
    ) {
        output += open
        guard !elements.isEmpty else { return output += close }
        let inner = indent.map { $0 + "  " }
        for (index, element) in elements.enumerated() {
            if index > 0 { output += "," }
            if let inner { output += "\n" + inner }
            write(element, &output, inner)
        }
        if let indent { output += "\n" + indent }
        output += close
    }

    /// The compact text of an object whose keys stay in the order given, not sorted: for lines a person reads
    /// (the event log puts `time` and `type` first, a handler's request line `request`).
    public static func orderedObjectText(_ fields: [(String, JSONValue)]) -> String {
        var line = "{"
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { line += "," }
            quote(key, to: &line)
            line += ":" + value.text
        }
        return line + "}"
    }

    /// A string literal: quotes, backslashes and control characters escaped (RFC 8259 section 7), the rest as is.
    public static func quote(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                output += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}

/// A strict recursive-descent JSON parser over UTF-8 bytes, nesting bounded so hostile input cannot exhaust the stack.
private struct JSONParser {
    /// Deeper nesting is refused: no request of blemu's needs more than four levels.
    static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() throws(JSONValue.ParseError) -> JSONValue {
        let value = try self.value()
        skipWhitespace()
        guard index == bytes.count else { throw error("unexpected text after the value") }
        return value
    }

    private mutating func value() throws(JSONValue.ParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try nested { parser throws(JSONValue.ParseError) in try parser.object() }
        case UInt8(ascii: "["): return try nested { parser throws(JSONValue.ParseError) in try parser.array() }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    private mutating func nested(
        _ body: (inout JSONParser) throws(JSONValue.ParseError) -> JSONValue
    ) throws(JSONValue.ParseError) -> JSONValue {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw error("nested more than \(Self.maximumDepth) deep") }
        index += 1
        return try body(&self)
    }

    private mutating func object() throws(JSONValue.ParseError) -> JSONValue {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return .object(members) }
        repeat {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = try string()
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw error("expected `:`") }
            // A repeated key keeps its last value, as most parsers (and JSONSerialization) do.
            members[key] = try value()
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        guard consume(UInt8(ascii: "}")) else { throw error("expected `,` or `}`") }
        return .object(members)
    }

    private mutating func array() throws(JSONValue.ParseError) -> JSONValue {
        var elements: [JSONValue] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return .array(elements) }
        repeat {
            elements.append(try value())
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        guard consume(UInt8(ascii: "]")) else { throw error("expected `,` or `]`") }
        return .array(elements)
    }

    private mutating func string() throws(JSONValue.ParseError) -> String {
        index += 1  // the opening quote
        var scalars = String.UnicodeScalarView()
        var start = index
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 {
                guard let run = String(validating: bytes[start..<index], as: UTF8.self) else {
                    throw error("a string is not UTF-8")
                }
                scalars.append(contentsOf: run.unicodeScalars)
                if byte < 0x20 { throw error("a control character in a string") }
                index += 1
                if byte == UInt8(ascii: "\"") { return String(scalars) }
                scalars.append(try escape())
                start = index
            } else {
                index += 1
            }
        }
    }

    private mutating func escape() throws(JSONValue.ParseError) -> Unicode.Scalar {
        guard index < bytes.count else { throw error("unterminated string") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try hexUnit()
            guard (0xD800...0xDBFF).contains(unit) else {
                guard let scalar = Unicode.Scalar(unit) else { throw error("a lone low surrogate") }
                return scalar
            }
            // A high surrogate must be followed by an escaped low one (RFC 8259 section 7).
            guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")) else { throw error("a lone high surrogate") }
            let low = try hexUnit()
            guard (0xDC00...0xDFFF).contains(low),
                let scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            else { throw error("a lone high surrogate") }
            return scalar
        default:
            index -= 1
            throw error("an unknown escape")
        }
    }

    private mutating func hexUnit() throws(JSONValue.ParseError) -> UInt32 {
        guard index + 4 <= bytes.count,
            let unit = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16),
            bytes[index..<index + 4].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") })
        else { throw error("`\\u` needs four hex digits") }
        index += 4
        return unit
    }

    private mutating func number() throws(JSONValue.ParseError) -> JSONValue {
        let start = index
        var isWhole = true
        _ = consume(UInt8(ascii: "-"))
        // RFC 8259 section 6: no leading zeros, digits on both sides of the point, an exponent with digits.
        if consume(UInt8(ascii: "0")) {
            if index < bytes.count, isDigit(bytes[index]) { throw error("a number with a leading zero") }
        } else {
            guard digits() > 0 else { throw error("expected digits") }
        }
        if consume(UInt8(ascii: ".")) {
            isWhole = false
            guard digits() > 0 else { throw error("expected digits after `.`") }
        }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            isWhole = false
            _ = consume(UInt8(ascii: "+")) || consume(UInt8(ascii: "-"))
            guard digits() > 0 else { throw error("expected digits in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isWhole, let integer = Int64(text) { return .integer(integer) }
        guard let real = Double(text), real.isFinite else { throw error("a number out of range") }
        return .real(real)
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        return index - start
    }

    private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private mutating func literal(_ word: String, _ value: JSONValue) throws(JSONValue.ParseError) -> JSONValue {
        let expected = Array(word.utf8)
        guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
            throw error("unexpected character")
        }
        index += expected.count
        return value
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipWhitespace() {
        while index < bytes.count,
            [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")].contains(bytes[index])
        {
            index += 1
        }
    }

    private func error(_ reason: String) -> JSONValue.ParseError { JSONValue.ParseError(offset: index, reason: reason) }
}

/// Literals, so a request reads as its JSON does: `["command": "notify", "id": "rate", "count": 3]`.
extension JSONValue:
    ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A whole number.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A number with a fraction.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral members: (String, JSONValue)...) {
        self = .object(Dictionary(members, uniquingKeysWith: { _, last in last }))
    }
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}
