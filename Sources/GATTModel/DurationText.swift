/// Durations as profiles and the command line spell them: `250ms`, `1s`, `1.5s`, `2min`, `1h`.
public enum DurationText {
    private static let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("min", 60), ("s", 1), ("h", 3600)]

    /// The duration `text` spells, to the millisecond; nil when it is not a non-negative amount with a unit.
    public static func parse(_ text: String) -> Duration? {
        for unit in units where text.hasSuffix(unit.suffix) {
            guard let amount = Double(text.dropLast(unit.suffix.count)), amount.isFinite, amount >= 0,
                amount * unit.seconds < 1e9
            else { return nil }
            return .milliseconds(Int64((amount * unit.seconds * 1000).rounded()))
        }
        return nil
    }

    /// `duration` in the shortest exact spelling: `2min`, `1s`, `1500ms`.
    public static func spell(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        if milliseconds > 0, milliseconds % 60_000 == 0 { return "\(milliseconds / 60_000)min" }
        if milliseconds > 0, milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
        return "\(milliseconds)ms"
    }
}
