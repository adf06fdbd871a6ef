/// Splits a byte stream into newline-terminated lines in time linear in the bytes, holding at most
/// `maximumLength` bytes of an unfinished line: a longer line is reported once as `.tooLong` and the rest of it is
/// discarded as it arrives, never buffered. A trailing carriage return (CRLF clients) is not part of a line.
public struct LineFramer: Sendable {
    /// One framed line.
    public enum Line: Equatable, Sendable {
        /// A line's text, without its `\r\n` or `\n`.
        case line(String)
        /// A line over the maximum, whose bytes were dropped.
        case tooLong
    }

    private let maximumLength: Int
    private var pending: [UInt8] = []
    private var isDiscarding = false

    /// A framer refusing lines longer than `maximumLength` bytes.
    public init(maximumLength: Int) { self.maximumLength = maximumLength }

    /// The lines `bytes` completes, in order; bytes after the last newline wait for the next call.
    public mutating func append(_ bytes: ArraySlice<UInt8>) -> [Line] {
        var lines: [Line] = []
        var start = bytes.startIndex
        // Each byte is looked at once: the search starts where the last one ended.
        while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            if isDiscarding {
                isDiscarding = false
            } else if pending.count + (newline - start) > maximumLength {
                lines.append(.tooLong)
            } else {
                pending += bytes[start..<newline]
                if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                lines.append(.line(String(decoding: pending, as: UTF8.self)))
            }
            pending.removeAll(keepingCapacity: true)
            start = newline + 1
        }
        guard !isDiscarding else { return lines }
        if pending.count + (bytes.endIndex - start) > maximumLength {
            lines.append(.tooLong)
            isDiscarding = true
            pending.removeAll()
        } else {
            pending += bytes[start...]
        }
        return lines
    }
}
