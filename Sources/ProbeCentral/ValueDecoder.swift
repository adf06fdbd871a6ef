import FoundationEssentials
import GATTModel
import LocalIO

/// Decodes the SIG characteristic formats a phone's Bluetooth app would show, by UUID; everything else that is
/// printable UTF-8 is shown as text. The report always carries the hex as well, so a wrong guess loses nothing.
public enum ValueDecoder {
    /// A one-line description of `bytes` read from a characteristic or descriptor with `uuid` ("2A37" or the
    /// full form); nil when the format is unknown and the bytes are not text. A value too short for its format
    /// says so instead of guessing.
    public static func describe(_ bytes: [UInt8], uuid: String) -> String? {
        if let number = BluetoothUUID(uuid)?.uint16, let decoder = table[number] {
            return decoder(bytes) ?? "malformed (\(bytes.count) bytes)"
        }
        return text(bytes)
    }

    /// Formats by 16-bit UUID (GATT Specification Supplement sections in the comments).
    static let table: [UInt16: @Sendable ([UInt8]) -> String?] = [
        0x2A37: heartRateMeasurement,
        0x2A19: { $0.count == 1 ? "\($0[0]) %" : nil },  // Battery Level, 3.27: u8 percent
        0x2A1C: temperatureMeasurement,
        0x2A38: bodySensorLocation,
        0x2A5B: cscMeasurement,
        0x2A6E: temperature,
        // Device Information strings (3.149, 3.155, 3.207, 3.116, 3.88, 3.214) and Device Name (3.72): UTF-8.
        0x2A29: text, 0x2A24: text, 0x2A25: text, 0x2A27: text, 0x2A26: text, 0x2A28: text, 0x2A00: text,
    ]

    /// Printable UTF-8 text, quoted; nil for empty or binary data.
    static func text(_ bytes: [UInt8]) -> String? {
        // A trailing NUL is common padding in string characteristics.
        let trimmed = bytes.last == 0 ? Array(bytes.dropLast()) : bytes
        guard !trimmed.isEmpty, let string = String(validating: trimmed, as: UTF8.self),
            // No control or format character (Unicode's Cc and Cf, what Foundation's controlCharacters held).
            string.unicodeScalars.allSatisfy({ ![.control, .format].contains($0.properties.generalCategory) })
        else { return nil }
        return "\"\(string)\""
    }

    /// Heart Rate Measurement (HRS 3.1.1): flags; bpm u8 or u16 (bit 0); sensor contact (bits 1-2); Energy
    /// Expended u16 kJ (bit 3); RR-Intervals u16 in 1/1024 s (bit 4), as many as remain.
    static func heartRateMeasurement(_ bytes: [UInt8]) -> String? {
        var reader = ByteReader(bytes)
        guard let flags = reader.u8() else { return nil }
        guard let bpm = flags & 0x01 != 0 ? reader.u16().map(Int.init) : reader.u8().map(Int.init) else { return nil }
        var parts = ["\(bpm) bpm"]
        switch (flags >> 1) & 0x03 {
        case 0x03: parts.append("contact detected")
        case 0x02: parts.append("no contact")
        default: break
        }
        if flags & 0x08 != 0 {
            guard let energy = reader.u16() else { return nil }
            parts.append("energy \(energy) kJ")
        }
        if flags & 0x10 != 0 {
            var intervals: [String] = []
            while let rr = reader.u16() { intervals.append(String(cFormat: "%.3f", Double(rr) / 1024)) }
            parts.append("RR \(intervals.joined(separator: " ")) s")
        }
        return parts.joined(separator: ", ")
    }

    /// Temperature Measurement (HTS 3.1): flags (bit 0 Fahrenheit, bit 1 time stamp, bit 2 temperature type),
    /// an IEEE-11073 FLOAT, then the optional 7-byte time stamp and 1-byte type. A missing type byte is tolerated:
    /// some thermometers set the flag and leave it out.
    static func temperatureMeasurement(_ bytes: [UInt8]) -> String? {
        var reader = ByteReader(bytes)
        guard let flags = reader.u8(), let raw = reader.u32() else { return nil }
        let value = MedicalFloat.decode(raw, as: .float)
        var parts = [number(value) + (flags & 0x01 != 0 ? " °F" : " °C")]
        if flags & 0x02 != 0 {
            guard let year = reader.u16(), let month = reader.u8(), let day = reader.u8(), let hour = reader.u8(),
                let minute = reader.u8(), let second = reader.u8()
            else { return nil }
            parts.append(String(cFormat: "at %04d-%02d-%02d %02d:%02d:%02d", year, month, day, hour, minute, second))
        }
        if flags & 0x04 != 0, let type = reader.u8() {
            parts.append("type \(temperatureTypes[Int(type)] ?? "\(type)")")
        }
        return parts.joined(separator: ", ")
    }

    /// Temperature Type names (HTS 3.2).
    static let temperatureTypes = [
        1: "Armpit", 2: "Body", 3: "Ear", 4: "Finger", 5: "Gastro-intestinal", 6: "Mouth", 7: "Rectum", 8: "Toe",
        9: "Tympanum",
    ]

    /// Body Sensor Location (HRS 3.2.1): one byte.
    static func bodySensorLocation(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 1 else { return nil }
        let names = ["Other", "Chest", "Wrist", "Finger", "Hand", "Ear Lobe", "Foot"]
        return Int(bytes[0]) < names.count ? names[Int(bytes[0])] : "reserved (\(bytes[0]))"
    }

    /// CSC Measurement (CSCS 3.1): flags; with bit 0 cumulative wheel revolutions u32 and last wheel event time
    /// u16 (1/1024 s); with bit 1 cumulative crank revolutions u16 and last crank event time u16.
    static func cscMeasurement(_ bytes: [UInt8]) -> String? {
        var reader = ByteReader(bytes)
        guard let flags = reader.u8() else { return nil }
        var parts: [String] = []
        if flags & 0x01 != 0 {
            guard let revolutions = reader.u32(), let time = reader.u16() else { return nil }
            parts.append("wheel \(revolutions) rev at \(String(cFormat: "%.3f", Double(time) / 1024)) s")
        }
        if flags & 0x02 != 0 {
            guard let revolutions = reader.u16(), let time = reader.u16() else { return nil }
            parts.append("crank \(revolutions) rev at \(String(cFormat: "%.3f", Double(time) / 1024)) s")
        }
        return parts.isEmpty ? "no data" : parts.joined(separator: ", ")
    }

    /// Temperature (GSS 3.219): s16 in 0.01 °C; 0x8000 means unknown.
    static func temperature(_ bytes: [UInt8]) -> String? {
        var reader = ByteReader(bytes)
        guard bytes.count == 2, let raw = reader.u16() else { return nil }
        if raw == 0x8000 { return "unknown" }
        return String(cFormat: "%.2f °C", Double(Int16(bitPattern: raw)) / 100)
    }

    /// A number without a trailing ".0" noise: 36.6, 37, nan.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+INF" : "-INF" }
        let text = String(cFormat: "%.6g", value)
        return text
    }
}

/// Little-endian reads from a byte array that answer nil at the end instead of trapping.
struct ByteReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func u8() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() -> UInt16? {
        guard offset + 2 <= bytes.count else { return nil }
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    mutating func u32() -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        defer { offset += 4 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }
}
