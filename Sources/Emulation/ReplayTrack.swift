import GATTModel
import GATTProfile
import LocalIO

/// A recorded series of `time,value` rows replayed by time: the value at `t` is the last row at or before `t`.
/// Values are numbers, or hex bytes for a whole value (`Replay.Format`).
///
/// The file is read once, when the schedule is built, so a malformed row stops the device at start-up with
/// `file:line: message` instead of failing in the middle of a run.
public struct ReplayTrack: Hashable, Sendable {
    /// The row times in seconds, never decreasing: since the device started, or since the schedule started for a
    /// replay sent at its recorded times.
    public let times: [Double]
    /// The value of each row: `.real` numbers, or `.bytes` for the hex format.
    public let values: [FieldValue]
    /// How long one pass lasts when the track repeats: from its first row to its last, plus the median gap between
    /// rows (a second for a single row), so that passes join at the recording's own pace.
    public let period: Double

    /// Reads a CSV file. Throws `BehaviourError.replay` when it cannot be read or a row is malformed.
    public init(contentsOf path: String, column: String?, format: Replay.Format = .number) throws(BehaviourError) {
        let bytes: [UInt8]
        do {
            bytes = try LocalFile.bytes(atPath: path)
        } catch {
            throw .replay(file: path, line: 0, message: "cannot read the replay file")
        }
        try self.init(csv: String(decoding: bytes, as: UTF8.self), file: path, column: column, format: format)
    }

    /// Parses CSV text: an optional header row, then `time,value[,...]` rows; blank lines and `#` lines are skipped.
    ///
    /// The value is the second column, or the column named `column` in the header. `file` only names errors.
    public init(
        csv text: String, file: String, column: String?, format: Replay.Format = .number
    ) throws(BehaviourError) {
        var times: [Double] = []
        var values: [FieldValue] = []
        var valueIndex = 1
        var sawFirstRow = false
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = offset + 1
            let trimmed = rawLine.trimmingWhitespace
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let cells = trimmed.split(separator: ",", omittingEmptySubsequences: false).map {
                String($0.trimmingWhitespace)
            }
            if !sawFirstRow {
                sawFirstRow = true
                if Double(cells[0]) == nil {
                    // A header: it names the columns, so a `column` can be looked up in it.
                    if let column {
                        guard let index = cells.firstIndex(of: column), index > 0 else {
                            let names = cells.joined(separator: ", ")
                            throw .replay(
                                file: file, line: line, message: "no value column `\(column)` in header (\(names))")
                        }
                        valueIndex = index
                    }
                    continue
                }
                if let column {
                    throw .replay(file: file, line: line, message: "column `\(column)` needs a header row naming it")
                }
            }
            guard cells.count > valueIndex else {
                throw .replay(
                    file: file, line: line, message: "expected at least \(valueIndex + 1) columns, got \(cells.count)")
            }
            guard let time = Double(cells[0]), time.isFinite else {
                throw .replay(file: file, line: line, message: "time `\(cells[0])` is not a number of seconds")
            }
            let cell = cells[valueIndex]
            let value: FieldValue
            switch format {
            case .number:
                guard let number = Double(cell), number.isFinite else {
                    throw .replay(file: file, line: line, message: "value `\(cell)` is not a number")
                }
                value = .real(number)
            case .hex:
                guard let bytes = Hex.bytes(cell) else {
                    throw .replay(file: file, line: line, message: "value `\(cell)` is not hex bytes")
                }
                value = .bytes(bytes)
            }
            if let last = times.last, time < last {
                throw .replay(file: file, line: line, message: "time \(cells[0]) is before the previous row's")
            }
            times.append(time)
            values.append(value)
        }
        guard !times.isEmpty else { throw .replay(file: file, line: 0, message: "no data rows") }
        self.times = times
        self.values = values
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
        let gap = gaps.isEmpty ? 1 : max(gaps[gaps.count / 2], 0.001)
        period = times[times.count - 1] - times[0] + gap
    }

    /// The value at `seconds`: the last row at or before it; the first row's before the track begins, and the
    /// last row's after it ends (the recording holds its final value rather than looping).
    public func value(at seconds: Double) -> FieldValue {
        values[max(firstRow(after: seconds) - 1, 0)]
    }

    /// The value of the row sent last at `seconds` when rows are sent at their own times, passes repeating every
    /// `period` when `repeats`: the row at or just before `seconds` in its pass.
    public func recordedValue(at seconds: Double, repeats: Bool) -> FieldValue {
        value(at: local(seconds, repeats: repeats).seconds)
    }

    /// When the next row is due, strictly after `seconds`, as rows are sent at their own times; nil when the track
    /// does not repeat and its last row has been sent.
    public func nextRowTime(after seconds: Double, repeats: Bool) -> Double? {
        let (pass, offset) = local(seconds, repeats: repeats)
        let next = firstRow(after: offset)
        if next < times.count { return times[next] + Double(pass) * period }
        return repeats ? times[0] + Double(pass + 1) * period : nil
    }

    /// `seconds` as a pass number and a time within that pass. A nanosecond of slack keeps a row's own deadline,
    /// computed as `time + pass * period`, inside that row despite rounding.
    private func local(_ seconds: Double, repeats: Bool) -> (pass: Int, seconds: Double) {
        let slack = seconds + 1e-9
        guard repeats, slack >= times[0] else { return (0, slack) }
        let pass = Int(((slack - times[0]) / period).rounded(.down))
        return (pass, slack - Double(pass) * period)
    }

    /// The index of the first row after `seconds` (binary search); `times.count` when none is.
    private func firstRow(after seconds: Double) -> Int {
        var low = 0
        var high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] <= seconds { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension Substring {
    /// The text without leading and trailing whitespace (spaces, tabs, a CSV line's `\r`).
    fileprivate var trimmingWhitespace: Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? start
        return self[start..<Swift.max(start, end)]
    }
}
