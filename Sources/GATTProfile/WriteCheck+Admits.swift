import GATTModel

extension WriteCheck {
    /// Whether a write rule's `validate` lets `value`, written to `characteristic`, through. The engine answers a
    /// write by it, and `blemu verify --writes` picks its valid and invalid values by it, so both read a rule alike.
    public func admits(_ value: [UInt8], to characteristic: Characteristic?) -> Bool {
        switch self {
        case .length(let range): range.contains(value.count)
        case .allowedValues(let allowed): allowed.contains(value)
        case .range(let range): Self.number(in: value, of: characteristic).map(range.contains) ?? false
        }
    }

    /// A written value as a number: its first typed field when the characteristic has a numeric one, else the bytes
    /// as a little-endian unsigned integer (1 to 8 bytes). Nil when too short, empty or too long.
    public static func number(in value: [UInt8], of characteristic: Characteristic?) -> Double? {
        if let first = characteristic?.layout?.fields.first, let count = first.type.byteCount {
            guard value.count >= count else { return nil }
            if let number = ValueLayout([first]).decode(Array(value.prefix(count)))?.first?.number { return number }
            return Double(littleEndian(value.prefix(count)))
        }
        guard (1...8).contains(value.count) else { return nil }
        return Double(littleEndian(value[...]))
    }

    private static func littleEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << UInt64($1.offset * 8) }
    }
}
