import Foundation

/// The ATT request list both test levels run (Tests/LabTests/Fixtures/lab-att-requests.txt): level 5 sends it
/// through the fake bluetoothd, level 6 through real bluetoothd in the lab. It is read here once, so the two levels
/// cannot read it differently; its header says what a line means.
public struct ATTRequestList: Sendable {
    /// One request of a session and the answer the central must get.
    public struct Request: Sendable, Hashable {
        /// The session (one connection) the request belongs to.
        public var session: String
        /// lab-att-client.py's operation with a characteristic id for the handle, e.g. `prepare:left:0:11111111`.
        public var operation: String
        /// `ok`, `ok HEX`, `sent`, `paused` or `error 0xNN ID`.
        public var answer: String
        /// Where the request is in the list, for failure messages.
        public var line: Int

        /// The operation's fields: the kind (`read`, `blob`, `write`, `command`, `prepare`, `execute`, `pause`) first.
        public var fields: [String] {
            operation.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        }

        /// The answer as lab-att-client.py prints it: an error's characteristic id becomes `handle 0xHHHH`.
        public func answer(handles: [String: Int]) -> String {
            let parts = answer.split(separator: " ")
            guard parts.count == 3, parts[0] == "error" else { return answer }
            return "error \(parts[1]) handle " + String(format: "0x%04x", handles[String(parts[2])] ?? 0)
        }
    }

    /// The list's file.
    public static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LabTests/Fixtures/lab-att-requests.txt").path

    /// Every request, in the list's order.
    public var requests: [Request]

    /// The sessions, in the order of their first request.
    public var sessions: [String] {
        var seen: Set<String> = []
        return requests.map(\.session).filter { seen.insert($0).inserted }
    }

    /// The requests of `session`, in order.
    public func requests(in session: String) -> [Request] { requests.filter { $0.session == session } }

    /// Reads the list; a line that is neither a comment, blank, nor `SESSION REQUEST ANSWER...` throws, naming it.
    public static func load(path: String = path) throws -> ATTRequestList {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var requests: [Request] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let words = line.split(separator: " ")
            guard let first = words.first, !first.hasPrefix("#") else { continue }
            guard words.count >= 3 else { throw MalformedLine(path: path, line: index + 1, text: String(line)) }
            requests.append(
                Request(
                    session: String(first), operation: String(words[1]), answer: words[2...].joined(separator: " "),
                    line: index + 1))
        }
        return ATTRequestList(requests: requests)
    }

    /// A line the list cannot hold.
    public struct MalformedLine: Error, CustomStringConvertible {
        /// The list's file.
        public var path: String
        /// The line's number, from 1.
        public var line: Int
        /// The line.
        public var text: String
        /// `file:line: expected SESSION REQUEST ANSWER, got ...`.
        public var description: String { "\(path):\(line): expected SESSION REQUEST ANSWER, got \(text)" }
    }
}
