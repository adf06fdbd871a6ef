/// Bytes as hex text, in the forms blemu prints: one spelling so logs, `show`, `adv` and JSON agree.
public enum Hex {
    /// One byte as two uppercase digits, `0E`.
    public static func byte(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0" + digits : digits
    }

    /// Bytes as uppercase pairs joined by `separator`: `02 01 06` by default, `020106` with "".
    public static func string(_ bytes: some Sequence<UInt8>, separator: String = " ") -> String {
        bytes.map(byte).joined(separator: separator)
    }
}
