#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A moment in UTC, to the microsecond, for the event log's `time` field: the realtime clock read with
/// `clock_gettime` rather than Foundation's `Date`, which would pull Foundation into the serving binary.
public struct WallTime: Hashable, Comparable, Sendable {
    /// Microseconds since 1970-01-01T00:00:00Z (negative before it).
    public var microsecondsSince1970: Int64

    /// The moment `microseconds` after the epoch.
    public init(microsecondsSince1970 microseconds: Int64) { microsecondsSince1970 = microseconds }

    /// The moment `seconds` after the epoch, rounded to the microsecond (1.789 s is 1788.9999... ms in binary).
    public init(secondsSince1970 seconds: Double) {
        microsecondsSince1970 = Int64((seconds * 1_000_000).rounded())
    }

    /// Now, by CLOCK_REALTIME.
    public static var now: WallTime {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return WallTime(microsecondsSince1970: Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000)
    }

    /// Milliseconds since the epoch, rounded down (also for moments before it).
    public var millisecondsSince1970: Int64 { Self.floorDivide(microsecondsSince1970, 1000) }

    /// ISO 8601 in UTC with milliseconds, `2024-05-01T12:34:56.789Z`: the proleptic Gregorian calendar from the day
    /// count (Howard Hinnant's civil_from_days), no time-zone database needed.
    public var iso8601: String {
        let milliseconds = millisecondsSince1970
        let days = Self.floorDivide(milliseconds, 86_400_000)
        let inDay = milliseconds - days * 86_400_000
        let z = days + 719_468
        let era = Self.floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return "\(Self.pad(year, 4))-\(Self.pad(month, 2))-\(Self.pad(day, 2))T\(Self.pad(inDay / 3_600_000, 2)):"
            + "\(Self.pad(inDay / 60000 % 60, 2)):\(Self.pad(inDay / 1000 % 60, 2)).\(Self.pad(inDay % 1000, 3))Z"
    }

    /// Earlier moments first.
    public static func < (lhs: WallTime, rhs: WallTime) -> Bool {
        lhs.microsecondsSince1970 < rhs.microsecondsSince1970
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(width - digits.count, 0)) + digits
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : (a - b + 1) / b }
}
