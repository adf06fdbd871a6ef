import GATTModel
import GATTProfile

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running `Generator`: the state that makes successive calls produce the declared series.
///
/// Tick-driven kinds (sequence, counter, random walk) advance once per `next(at:)` call; time-driven kinds (sine,
/// replay) read only the elapsed time, so a missed tick skips nothing they would have shown.
public struct GeneratorState: Hashable, Sendable {
    private enum Kind: Hashable, Sendable {
        case constant(FieldValue)
        case sequence([FieldValue], repeats: Bool, index: Int)
        case counter(next: Double, step: Double, range: ClosedRange<Double>, wraps: Bool)
        case randomWalk(next: Double, step: Double, range: ClosedRange<Double>, random: SplitMix64)
        case sine(period: Double, amplitude: Double, offset: Double)
        case replay(ReplayTrack, repeats: Bool)
        /// Where the value is and when it was last moved; nil before the first tick.
        case follow(state: String, ratePerSecond: Double, start: Double?, last: Position?)
    }

    /// Where a `follow` was, and when.
    private struct Position: Hashable, Sendable {
        var value: Double
        var at: Duration
    }

    private var kind: Kind

    /// Prepares a generator; a replay loads its file now, relative to `baseDirectory` (the profile's directory)
    /// unless the path is absolute.
    ///
    /// Throws `BehaviourError.replay` when a replay file is missing or malformed.
    public init(_ generator: Generator, baseDirectory: String? = nil) throws(BehaviourError) {
        switch generator {
        case .constant(let value):
            kind = .constant(value)
        case .sequence(let values, let repeats):
            kind = .sequence(values, repeats: repeats, index: 0)
        case .counter(let start, let step, let range, let wraps):
            kind = .counter(next: start, step: step, range: range, wraps: wraps)
        case .randomWalk(let start, let step, let range, let seed):
            kind = .randomWalk(
                next: min(max(start, range.lowerBound), range.upperBound), step: abs(step), range: range,
                random: SplitMix64(seed: seed))
        case .sine(let period, let amplitude, let offset):
            kind = .sine(period: period.seconds, amplitude: amplitude, offset: offset)
        case .replay(let replay):
            var path = replay.file
            if let baseDirectory, !path.hasPrefix("/") { path = baseDirectory + "/" + path }
            kind = .replay(
                try ReplayTrack(contentsOf: path, column: replay.column, format: replay.format), repeats: replay.repeats
            )
        case .follow(let state, let rate, let start):
            kind = .follow(state: state, ratePerSecond: rate, start: start, last: nil)
        }
    }

    /// The next value. `elapsed` is the time since the device started; only sine, replay and follow read it.
    /// `state` is the device's state now, which `follow` moves toward.
    public mutating func next(at elapsed: Duration, state: [String: FieldValue] = [:]) -> FieldValue {
        switch kind {
        case .follow(let name, let rate, let start, let last):
            let target = state[name]?.number
            // Before the first tick the value is `start`, else the variable's value: a ramp starts from rest.
            guard let last else {
                let value = start ?? target ?? 0
                kind = .follow(
                    state: name, ratePerSecond: rate, start: start, last: Position(value: value, at: elapsed))
                return .real(value)
            }
            let allowed = rate * max((elapsed - last.at).seconds, 0)
            let goal = target ?? last.value
            let value =
                abs(goal - last.value) <= allowed ? goal : last.value + (goal > last.value ? allowed : -allowed)
            kind = .follow(state: name, ratePerSecond: rate, start: start, last: Position(value: value, at: elapsed))
            return .real(value)
        case .constant(let value):
            return value
        case .sequence(let values, let repeats, let index):
            guard !values.isEmpty else { return .bytes([]) }
            let value = values[index]
            let following = index + 1 < values.count ? index + 1 : (repeats ? 0 : index)
            kind = .sequence(values, repeats: repeats, index: following)
            return value
        case .counter(let value, let step, let range, let wraps):
            kind = .counter(
                next: Self.count(from: value, by: step, in: range, wraps: wraps), step: step, range: range,
                wraps: wraps)
            return .real(value)
        case .randomWalk(let value, let step, let range, var random):
            // A uniform move in -step...step, clamped: the walk never leaves the range nor moves more than `step`.
            let move = (random.nextUnitInterval() * 2 - 1) * step
            let following = min(max(value + move, range.lowerBound), range.upperBound)
            kind = .randomWalk(next: following, step: step, range: range, random: random)
            return .real(value)
        case .sine(let period, let amplitude, let offset):
            guard period > 0 else { return .real(offset) }
            return .real(offset + amplitude * sin(2 * Double.pi * elapsed.seconds / period))
        case .replay(let track, let repeats):
            return track.recordedValue(at: elapsed.seconds, repeats: repeats)
        }
    }

    /// Goes on from `value`, set from outside (a protocol's `set-field`): a counter's next value is one step from it
    /// and a random walk's at most one step from it, both within their range; a `follow` moves on from it toward its
    /// variable. A constant, sequence, sine or replay keeps its own series: its next value does not build on the last.
    public mutating func rebase(to value: Double) {
        switch kind {
        case .counter(_, let step, let range, let wraps):
            let from = min(max(value, range.lowerBound), range.upperBound)
            kind = .counter(
                next: Self.count(from: from, by: step, in: range, wraps: wraps), step: step, range: range, wraps: wraps)
        case .randomWalk(_, let step, let range, var random):
            let move = (random.nextUnitInterval() * 2 - 1) * step
            let following = min(max(value + move, range.lowerBound), range.upperBound)
            kind = .randomWalk(next: following, step: step, range: range, random: random)
        case .follow(let state, let rate, let start, let last?):
            kind = .follow(state: state, ratePerSecond: rate, start: start, last: Position(value: value, at: last.at))
        case .follow(let state, let rate, _, nil):
            kind = .follow(state: state, ratePerSecond: rate, start: value, last: nil)
        case .constant, .sequence, .sine, .replay:
            break
        }
    }

    /// For a replay sent at its recorded times: when its next row is due, strictly after `elapsed` (the time since
    /// the schedule started); nil when the recording is over, or for every other generator.
    public func nextRecordedTime(after elapsed: Duration) -> Duration? {
        guard case .replay(let track, let repeats) = kind,
            let seconds = track.nextRowTime(after: elapsed.seconds, repeats: repeats)
        else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// The rows of a replay, for checks made when a profile loads; nil for every other generator.
    public var replayValues: [FieldValue]? {
        if case .replay(let track, _) = kind { track.values } else { nil }
    }

    /// A counter's next value: past a bound it wraps to the other bound, or stops at the bound it reached.
    private static func count(
        from value: Double, by step: Double, in range: ClosedRange<Double>, wraps: Bool
    )
        -> Double
    {
        let next = value + step
        if next > range.upperBound { return wraps ? range.lowerBound : range.upperBound }
        if next < range.lowerBound { return wraps ? range.upperBound : range.lowerBound }
        return next
    }
}
