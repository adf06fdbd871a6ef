import Foundation
import Testing

/// `blemu mcp` as an MCP client starts it: JSON-RPC lines on stdin and stdout, the socket's absence an error result
/// and a line on stderr (never the end of the server), exit 0 when stdin closes (a client that stopped reading
/// first included), 64 without --control.
@Suite(.timeLimit(.minutes(1)))
struct McpCommandTests {
    @Test func withoutControlItIsAUsageErrorAndItsHelpSaysAMissingSocketIsNotFatal() async throws {
        let missing = try await BlemuProcess.run("mcp")
        #expect(missing.status == 64, "\(missing.stderr)")
        #expect(missing.stderr.contains("--control"), "\(missing.stderr)")
        let help = try await BlemuProcess.run("mcp", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Example") && help.stdout.contains("blemu mcp --control"), "\(help.stdout)")
        #expect(help.stdout.contains("need not be there yet"), "\(help.stdout)")
    }

    @Test func itAnswersOverStdioWithoutASocketAndExitsZeroWhenStdinCloses() async throws {
        let socket = "/tmp/blemu-mcp-absent-\(UUID().uuidString.prefix(8)).sock"
        let process = Process()
        process.executableURL = BlemuProcess.executable
        process.arguments = ["mcp", "--control", socket]
        let (input, output, errors) = (Pipe(), Pipe(), Pipe())
        (process.standardInput, process.standardOutput, process.standardError) = (input, output, errors)
        try process.run()
        let requests = [
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#,
            #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            #"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get","arguments":{"id":"battery-level"}}}"#,
        ]
        input.fileHandleForWriting.write(Data((requests.joined(separator: "\n") + "\n").utf8))
        // Every answer first, then stdin closes: a client that closes it leaves nothing in flight.
        let lines = try await blocking { try Self.responses(from: output.fileHandleForReading, ids: [1, 2, 3]) }
        let answers = lines.mapValues(Self.object)
        try input.fileHandleForWriting.close()
        let status = try await blocking {
            process.waitUntilExit()
            return process.terminationStatus
        }
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status == 0, "\(stderr)")
        #expect(stderr.contains("blemu mcp: cannot reach the control socket (\(socket)"), "\(stderr)")

        let server = (answers[1]?["result"] as? [String: Any])?["serverInfo"] as? [String: Any]
        #expect(server?["name"] as? String == "blemu", "\(answers[1] ?? [:])")
        let version = try await BlemuProcess.run("--version").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(server?["version"] as? String == version, "\(answers[1] ?? [:])")
        let tools = ((answers[2]?["result"] as? [String: Any])?["tools"] as? [[String: Any]] ?? []).compactMap {
            $0["name"] as? String
        }
        #expect(tools.count == 16 && tools.contains("wait_for_event") && tools.contains("describe"), "\(tools)")
        let call = answers[3]?["result"] as? [String: Any]
        #expect(call?["isError"] as? Bool == true, "\(answers[3] ?? [:])")
        let text = (call?["content"] as? [[String: Any]])?.first?["text"] as? String ?? ""
        #expect(
            text.hasPrefix("get: cannot reach the control socket (\(socket): No such file or directory)"), "\(text)")
    }

    @Test func aClientThatStoppedReadingCostsTheAnswersNotTheServer() async throws {
        let process = Process()
        process.executableURL = BlemuProcess.executable
        process.arguments = ["mcp", "--control", "/tmp/blemu-mcp-absent-\(UUID().uuidString.prefix(8)).sock"]
        let (input, output, errors) = (Pipe(), Pipe(), Pipe())
        (process.standardInput, process.standardOutput, process.standardError) = (input, output, errors)
        try process.run()
        let initialize =
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#
        input.fileHandleForWriting.write(Data((initialize + "\n").utf8))
        _ = try await blocking { try Self.responses(from: output.fileHandleForReading, ids: [1]) }
        // The client stops reading: every answer from here on is written to a pipe with no reader (EPIPE, and
        // SIGPIPE unless it is ignored), then stdin closes as the client goes.
        try output.fileHandleForReading.close()
        let pings = (2...21).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"ping"}"# }
        input.fileHandleForWriting.write(Data((pings.joined(separator: "\n") + "\n").utf8))
        // The server says so once, when an answer first meets the closed pipe: then stdin closes. A watchdog, not a
        // wait: a server that never says it is killed, so the read ends and the test fails instead of hanging.
        let pid = process.processIdentifier
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            kill(pid, SIGKILL)
        }
        let said = try await blocking {
            try Self.text(from: errors.fileHandleForReading, until: "cannot write to standard output (Broken pipe)")
        }
        watchdog.cancel()
        try input.fileHandleForWriting.close()
        let ended = try await blocking {
            process.waitUntilExit()
            return (process.terminationReason, process.terminationStatus)
        }
        #expect(ended.0 == .exit && ended.1 == 0, "ended by \(ended.0 == .exit ? "exit" : "signal") \(ended.1)")
        let stderr = said + String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.components(separatedBy: "cannot write to standard output").count == 2, "said once: \(stderr)")
    }

    /// What `handle` gives until it holds `phrase`; throws when output ends first.
    static func text(from handle: FileHandle, until phrase: String) throws -> String {
        var text = ""
        while !text.contains(phrase) {
            let chunk = handle.availableData
            guard !chunk.isEmpty else { throw EndOfOutput(seen: []) }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }

    /// A line's JSON object.
    static func object(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
    }

    /// The JSON-RPC response lines read from `handle` until each of `ids` has one, by id; throws when output ends
    /// first.
    static func responses(from handle: FileHandle, ids: Set<Int>) throws -> [Int: String] {
        var pending = Data()
        var found: [Int: String] = [:]
        while !ids.isSubset(of: found.keys) {
            let chunk = handle.availableData
            guard !chunk.isEmpty else { throw EndOfOutput(seen: found.keys.sorted()) }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending = Data(pending[(newline + 1)...])
                guard let id = object(String(decoding: line, as: UTF8.self))["id"] as? Int else { continue }
                found[id] = String(decoding: line, as: UTF8.self)
            }
        }
        return found
    }

    /// Standard output ended before every answer came.
    struct EndOfOutput: Error {
        /// The ids answered.
        var seen: [Int]
    }
}

/// Runs blocking work on a thread of its own, never on the cooperative pool (two threads on two cores).
private func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
