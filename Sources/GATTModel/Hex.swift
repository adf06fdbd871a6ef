/// Bytes as hex text, in the forms blemu prints: one spelling so logs, `show`, `adv` and JSON agree.
public enum Hex {
    /// One byte as two uppercase digits, `0E`.
    public static func byte(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0" + digits : digits
    }

    /// A 16-bit value as four uppercase digits, most significant first: `0341`.
    public static func word(_ value: UInt16) -> String {
        byte(UInt8(truncatingIfNeeded: value >> 8)) + byte(UInt8(truncatingIfNeeded: value))
    }

    /// Bytes as uppercase pairs joined by `separator`: `02 01 06` by default, `020106` with "".
    public static func string(_ bytes: some Sequence<UInt8>, separator: String = " ") -> String {
        bytes.map(byte).joined(separator: separator)
    }

    /// Hex text to bytes, in every spelling blemu accepts from a user: `06 48`, `0648`, `0x0648`, `0x06 0x48`,
    /// `06:48`, either case, bytes split by whitespace or colons (a folded YAML block, a control `hex`); nil for an
    /// odd digit count or a character that is not hex.
    public static func bytes(_ text: String) -> [UInt8]? {
        var digits: [UInt8] = []
        for token in text.split(whereSeparator: { $0.isWhitespace || $0 == ":" }) {
            let body = token.hasPrefix("0x") || token.hasPrefix("0X") ? token.dropFirst(2) : token
            for character in body {
                guard character.isASCII, let digit = character.hexDigitValue else { return nil }
                digits.append(UInt8(digit))
            }
        }
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }
}
