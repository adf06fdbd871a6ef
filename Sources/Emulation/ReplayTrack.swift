import Foundation

/// A recorded series of `time,value` rows replayed by time: the value at `t` is the last row at or before `t`.
///
/// The file is read once, when the schedule is built, so a malformed row stops the device at start-up with
/// `file:line: message` instead of failing in the middle of a run.
public struct ReplayTrack: Hashable, Sendable {
    /// The row times in seconds since the device started, never decreasing.
    public let times: [Double]
    /// The value of each row.
    public let values: [Double]

    /// Reads a CSV file. Throws `BehaviourError.replay` when it cannot be read or a row is malformed.
    public init(contentsOf path: String, column: String?) throws(BehaviourError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .replay(file: path, line: 0, message: "cannot read the replay file")
        }
        try self.init(csv: String(decoding: data, as: UTF8.self), file: path, column: column)
    }

    /// Parses CSV text: an optional header row, then `time,value[,...]` rows; blank lines and `#` lines are skipped.
    ///
    /// The value is the second column, or the column named `column` in the header. `file` only names errors.
    public init(csv text: String, file: String, column: String?) throws(BehaviourError) {
        var times: [Double] = []
        var values: [Double] = []
        var valueIndex = 1
        var sawFirstRow = false
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = offset + 1
            let trimmed = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let cells = trimmed.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
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
            guard let value = Double(cells[valueIndex]), value.isFinite else {
                throw .replay(file: file, line: line, message: "value `\(cells[valueIndex])` is not a number")
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
    }

    /// The value at `seconds`: the last row at or before it; the first row's before the track begins, and the
    /// last row's after it ends (the recording holds its final value rather than looping).
    public func value(at seconds: Double) -> Double {
        // Binary search for the first row after `seconds`.
        var low = 0
        var high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] <= seconds { low = middle + 1 } else { high = middle }
        }
        return values[max(low - 1, 0)]
    }
}
