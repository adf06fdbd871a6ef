#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// Encodes a number: exactly, with the mantissa of fewest digits, when the format can hold it exactly (36.6 is
    /// 366 x 10^-1); otherwise rounded to the most precise exponent whose mantissa fits, so the result is within
    /// half a unit of its last place (36.6123456 as a FLOAT is 3661235 x 10^-5).
    ///
    /// Returns nil when the magnitude is beyond the format. NaN and infinities map to their reserved codes; a
    /// magnitude below half the smallest unit (10^-8 for SFLOAT, 10^-128 for FLOAT) becomes zero.
    public static func encode(_ value: Double, as format: Format) -> UInt32? {
        if value.isNaN { return format.nan }
        if value.isInfinite { return value > 0 ? format.positiveInfinity : format.negativeInfinity }
        guard let (exponent, mantissa) = exactFit(value, format) ?? nearestFit(value, format) else { return nil }
        let mask: UInt32 = (1 << format.mantissaBits) - 1
        let exponentBits = UInt32(bitPattern: Int32(exponent)) & (format == .sfloat ? 0xF : 0xFF)
        return exponentBits << format.mantissaBits | UInt32(bitPattern: Int32(mantissa)) & mask
    }

    /// The exponent nearest 0 (0, -1, -2, ..., then 1, 2, ...) at which `value` is a whole mantissa that fits, if
    /// any. Exact means the mantissa gives `value` back to within floating-point noise relative to `value` itself:
    /// a mantissa rounded to 0 never counts as exact for a value that is not 0.
    private static func exactFit(_ value: Double, _ format: Format) -> (Int, Int)? {
        if value == 0 { return (0, 0) }
        let limit = Double(format.largestMantissa)
        let exponents =
            Array(stride(from: 0, through: format.exponentRange.lowerBound, by: -1))
            + Array(1...format.exponentRange.upperBound)
        for exponent in exponents {
            let mantissa = (value / pow(10, Double(exponent))).rounded()
            guard mantissa != 0, abs(mantissa) <= limit else { continue }
            if abs(mantissa * pow(10, Double(exponent)) - value) <= 1e-12 * abs(value) {
                return (exponent, Int(mantissa))
            }
        }
        return nil
    }

    /// The most precise encoding: the smallest exponent at which the rounded mantissa fits; nil when even the
    /// largest exponent cannot hold `value`.
    private static func nearestFit(_ value: Double, _ format: Format) -> (Int, Int)? {
        let limit = Double(format.largestMantissa)
        for exponent in format.exponentRange {
            let mantissa = (value / pow(10, Double(exponent))).rounded()
            if abs(mantissa) <= limit { return (exponent, Int(mantissa)) }
        }
        return nil
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
