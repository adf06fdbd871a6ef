/// A Bluetooth UUID: 16-, 32- or 128-bit, held as its full 128 bits (Core Spec Vol 3, Part B, 2.5.1).
///
/// 16- and 32-bit UUIDs are shorthands for UUIDs built on the Bluetooth Base UUID
/// `00000000-0000-1000-8000-00805F9B34FB`; two spellings of the same UUID compare equal.
public struct BluetoothUUID: Hashable, Sendable, Comparable {
    /// The most significant 64 bits, in the order a UUID string is written.
    public let high: UInt64
    /// The least significant 64 bits.
    public let low: UInt64

    /// How many bits the shortest form of a UUID takes.
    public enum Width: Int, Sendable, Comparable {
        case bits16 = 16
        case bits32 = 32
        case bits128 = 128

        /// Orders widths by size.
        public static func < (lhs: Width, rhs: Width) -> Bool { lhs.rawValue < rhs.rawValue }
        /// The number of bytes the UUID takes on the air in this width.
        public var byteCount: Int { rawValue / 8 }
    }

    // The Base UUID's 96 fixed bits: a shorthand sits in the top 32 bits of `high`.
    static let baseHigh: UInt64 = 0x0000_0000_0000_1000
    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    /// A UUID from its two 64-bit halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The 128-bit UUID for a 16-bit SIG-assigned number.
    public init(_ value: UInt16) { self.init(uint32: UInt32(value)) }

    /// The 128-bit UUID for a 32-bit shorthand.
    public init(uint32 value: UInt32) {
        self.init(high: UInt64(value) << 32 | Self.baseHigh, low: Self.baseLow)
    }

    /// Parses `180D`, `0x180D`, `0000180D` (32-bit) and `0000180d-0000-1000-8000-00805f9b34fb`, any case.
    ///
    /// Returns nil for anything else: wrong length, misplaced dashes, non-hex digits.
    public init?(_ text: String) {
        var digits = Substring(text)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        switch digits.count {
        case 4, 8:
            guard digits.allSatisfy(\.isHexDigit), let value = UInt32(digits, radix: 16) else { return nil }
            self.init(uint32: value)
        case 32, 36:
            if digits.count == 36 {
                let dashes = [8, 13, 18, 23]
                for (offset, character) in digits.enumerated() where (character == "-") != dashes.contains(offset) {
                    return nil
                }
                digits.removeAll { $0 == "-" }
            }
            guard digits.allSatisfy(\.isHexDigit),
                let high = UInt64(digits.prefix(16), radix: 16),
                let low = UInt64(digits.suffix(16), radix: 16)
            else { return nil }
            self.init(high: high, low: low)
        default:
            return nil
        }
    }

    /// Whether the UUID is built on the Bluetooth Base UUID, so it has a 16- or 32-bit form.
    public var isBased: Bool { high & 0xFFFF_FFFF == Self.baseHigh && low == Self.baseLow }

    /// The shortest width the UUID can be sent in.
    public var width: Width {
        guard isBased else { return .bits128 }
        return high >> 48 == 0 ? .bits16 : .bits32
    }

    /// The 16-bit assigned number, when the UUID has one.
    public var uint16: UInt16? { width == .bits16 ? UInt16(truncatingIfNeeded: high >> 32) : nil }

    /// The 32-bit shorthand, when the UUID is built on the Base UUID.
    public var uint32: UInt32? { isBased ? UInt32(truncatingIfNeeded: high >> 32) : nil }

    /// The 16 bytes, most significant first (as written in a UUID string).
    public var bigEndianBytes: [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: high >> ($0 * 8)) }
            + (0..<8).reversed().map { UInt8(truncatingIfNeeded: low >> ($0 * 8)) }
    }

    /// The shortest form's bytes, least significant first, as AD structures and ATT carry them.
    public var littleEndianBytes: [UInt8] {
        switch width {
        case .bits16, .bits32:
            let value = uint32!
            return (0..<width.byteCount).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
        case .bits128:
            return bigEndianBytes.reversed()
        }
    }

    /// The full lowercase 128-bit string, the form BlueZ's `UUID` properties use.
    public var fullString: String {
        let hex = bigEndianBytes.map { byte in
            String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
        }.joined()
        let cut = [8, 4, 4, 4, 12]
        var parts: [Substring] = []
        var rest = Substring(hex)
        for length in cut {
            parts.append(rest.prefix(length))
            rest = rest.dropFirst(length)
        }
        return parts.joined(separator: "-")
    }

    /// Orders UUIDs by their 128-bit value.
    public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

extension BluetoothUUID: CustomStringConvertible {
    /// The shortest canonical spelling, uppercase as Core Bluetooth prints it: `180D`, `0001180D`, or the full form.
    public var description: String {
        switch width {
        case .bits16: return hex(UInt64(uint16!), digits: 4)
        case .bits32: return hex(UInt64(uint32!), digits: 8)
        case .bits128: return fullString.uppercased()
        }
    }

    private func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: digits - text.count) + text
    }
}
