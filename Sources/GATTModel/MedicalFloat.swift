import Foundation

/// IEEE 11073-20601 SFLOAT (16-bit) and FLOAT (32-bit): a base-10 exponent and a mantissa, with reserved
/// mantissas for NaN, NRes and infinities (Personal Health Devices Transcoding, 2.2.2 and 2.2.3).
public enum MedicalFloat {
    /// The 16- or 32-bit layout.
    public enum Format: Sendable {
        /// 4-bit exponent, 12-bit mantissa.
        case sfloat
        /// 8-bit exponent, 24-bit mantissa.
        case float

        var mantissaBits: Int { self == .sfloat ? 12 : 24 }
        var exponentRange: ClosedRange<Int> { self == .sfloat ? -8...7 : -128...127 }
        // The top two and bottom three mantissas are reserved (NaN, NRes, +-INF, reserved): 0x7FE...0x802.
        var largestMantissa: Int { (1 << (mantissaBits - 1)) - 3 }
        /// The largest finite magnitude the format holds: the largest mantissa at the top exponent.
        public var largestMagnitude: Double { Double(largestMantissa) * pow(10, Double(exponentRange.upperBound)) }
        var nan: UInt32 { (1 << (mantissaBits - 1)) - 1 }
        var positiveInfinity: UInt32 { (1 << (mantissaBits - 1)) - 2 }
        var negativeInfinity: UInt32 { (1 << (mantissaBits - 1)) + 2 }
    }

    /// Encodes a number, choosing the smallest exponent magnitude that is exact, else the most precise one.
    ///
    /// Returns nil when the magnitude is beyond the format. NaN and infinities map to their reserved codes.
    public static func encode(_ value: Double, as format: Format) -> UInt32? {
        let mask: UInt32 = (1 << format.mantissaBits) - 1
        if value.isNaN { return format.nan }
        if value.isInfinite { return value > 0 ? format.positiveInfinity : format.negativeInfinity }
        let limit = Double(format.largestMantissa)
        let exponents =
            Array(stride(from: 0, through: format.exponentRange.lowerBound, by: -1))
            + Array(1...format.exponentRange.upperBound)
        var chosen: (exponent: Int, mantissa: Int)?
        for exponent in exponents {
            let scaled = value / pow(10, Double(exponent))
            guard abs(scaled) <= limit else { continue }
            if abs(scaled - scaled.rounded()) < 1e-9 * max(1, abs(scaled)) {
                chosen = (exponent, Int(scaled.rounded()))
                break
            }
            // Not exact: remember the most precise fit (the most negative exponent that fits).
            if chosen == nil || exponent < chosen!.exponent { chosen = (exponent, Int(scaled.rounded())) }
        }
        guard let (exponent, mantissa) = chosen else { return nil }
        let exponentBits = UInt32(bitPattern: Int32(exponent)) & (format == .sfloat ? 0xF : 0xFF)
        return exponentBits << format.mantissaBits | UInt32(bitPattern: Int32(mantissa)) & mask
    }

    /// Decodes the raw bits into a number; NaN, NRes and the reserved code decode as NaN.
    public static func decode(_ raw: UInt32, as format: Format) -> Double {
        let bits = format.mantissaBits
        let mask: UInt32 = (1 << bits) - 1
        let mantissaBits = raw & mask
        switch mantissaBits {
        case format.positiveInfinity: return .infinity
        case format.negativeInfinity: return -.infinity
        case format.nan...(format.negativeInfinity - 1): return .nan
        default: break
        }
        let mantissa = Int32(bitPattern: mantissaBits << (32 - UInt32(bits))) >> (32 - Int32(bits))
        let exponentWidth = format == .sfloat ? 4 : 8
        let exponentRaw = raw >> UInt32(bits) & ((1 << exponentWidth) - 1)
        let exponent = Int32(bitPattern: exponentRaw << (32 - UInt32(exponentWidth))) >> (32 - Int32(exponentWidth))
        return Double(mantissa) * pow(10, Double(exponent))
    }
}
