import Foundation
import GATTModel
import Peripheral

/// Encodes event records as JSON lines: one object per line, `time` (ISO 8601, UTC, milliseconds) and `type` first,
/// so `jq`, `grep` and a CI log viewer read them. Pure: it returns text; writing the log is the caller's.
///
/// Keys are camelCase; `type` values are kebab-case like the profile's keys; bytes are hex strings spelled as
/// everywhere in blemu (`Hex`: uppercase, no separator), so a value in the log matches `blemu show` and the probe.
public enum EventLineEncoder {
    /// One JSON object for the record, without the trailing newline.
    public static func encode(_ record: EventRecord) -> String {
        var fields: [(String, JSON)] = [("time", .string(timestamp(record.time)))]
        switch record.event {
        case .stateChanged(let state):
            fields += [("type", .string("state")), ("state", .string(state))]
        case .connected(let central):
            fields += [("type", .string("connected")), ("central", .string(central))]
        case .disconnected(let central):
            fields += [("type", .string("disconnected")), ("central", .string(central))]
        case .request(let operation, let central, let id, let value, let answer, let latency):
            fields += [
                ("type", .string("request")), ("operation", .string(operation.rawValue)), ("central", .string(central)),
                ("characteristic", .string(id)), ("value", .string(hex(value))),
            ]
            switch answer {
            case .success: fields.append(("result", .string("success")))
            case .error(let error, let asked):
                fields += [
                    ("result", .string("error")), ("code", .number(Double(error.rawValue))),
                    ("error", .string(error.description)),
                ]
                if let asked {
                    fields += [("askedCode", .number(Double(asked.rawValue))), ("asked", .string(asked.description))]
                }
            }
            fields.append(("latencyMs", .number((latency.seconds * 1_000_000).rounded() / 1000)))
        case .subscribed(let central, let id):
            fields += [("type", .string("subscribed")), ("central", .string(central)), ("characteristic", .string(id))]
        case .unsubscribed(let central, let id):
            fields += [
                ("type", .string("unsubscribed")), ("central", .string(central)), ("characteristic", .string(id)),
            ]
        case .notification(let id, let value, let isIndication, let centrals):
            fields += [
                ("type", .string(isIndication ? "indication" : "notification")), ("characteristic", .string(id)),
                ("value", .string(hex(value))), ("centrals", .number(Double(centrals))),
            ]
        case .queueFull(let id):
            fields += [("type", .string("queue-full")), ("characteristic", .string(id))]
        case .queueReady:
            fields.append(("type", .string("queue-ready")))
        case .fault(let description, let id):
            fields += [("type", .string("fault")), ("fault", .string(description))]
            if let id { fields.append(("characteristic", .string(id))) }
        case .restarted(let reason):
            fields += [("type", .string("restart")), ("reason", .string(reason))]
        case .pairing(let pairing):
            fields += [
                ("type", .string("pairing")), ("central", .string(pairing.central)),
                ("method", .string(pairing.method.rawValue)),
            ]
            if let passkey = pairing.passkey { fields.append(("passkey", .string(PairingEvent.spelled(passkey)))) }
            fields.append(("result", .string(pairing.accepted ? "accepted" : "rejected")))
        case .linesDropped(let count):
            fields += [("type", .string("lines-dropped")), ("count", .number(Double(count)))]
        }
        return "{" + fields.map { quote($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
    }

    /// Several records, each on its own line, each line ending in a newline.
    public static func encode(_ records: [EventRecord]) -> String {
        records.map { encode($0) + "\n" }.joined()
    }

    /// `2024-05-01T12:34:56.789Z`: computed from the epoch with integer arithmetic (Hinnant's civil-from-days),
    /// so it needs no formatter, locale or time zone database and is the same on every platform.
    static func timestamp(_ date: Date) -> String {
        // Round to whole microseconds first: 1.789 s is 1788.9999... ms in binary, which must not print as .788.
        let milliseconds = floorDivide(Int64((date.timeIntervalSince1970 * 1_000_000).rounded()), 1000)
        let days = floorDivide(milliseconds, 86_400_000)
        let inDay = milliseconds - days * 86_400_000
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(inDay / 3_600_000, 2)):"
            + "\(pad(inDay / 60000 % 60, 2)):\(pad(inDay / 1000 % 60, 2)).\(pad(inDay % 1000, 3))Z"
    }

    private enum JSON {
        case string(String)
        case number(Double)

        var text: String {
            switch self {
            case .string(let string): quote(string)
            case .number(let number):
                number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
            }
        }
    }

    /// A JSON string literal (RFC 8259, 7): quotes, backslashes and control characters escaped.
    private static func quote(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                result += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    private static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes, separator: "") }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(width - digits.count, 0)) + digits
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : (a - b + 1) / b }
}
