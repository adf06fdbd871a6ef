import BlueZTesting
import DBus
import Logging
import Synchronization
import Testing

/// What a `RecordingLogHandler` saw: the lines written (level, message, the file that wrote them) and how many
/// times its level was asked.
private final class LogRecord: Sendable {
    let lines = Mutex<[(text: String, file: String)]>([])
    let levelReads = Atomic<Int>(0)
}

/// Keeps the lines a logger writes, and counts each time anyone asks its level.
private struct RecordingLogHandler: LogHandler {
    let record: LogRecord
    let level: Logger.Level
    var metadata: Logger.Metadata = [:]

    var logLevel: Logger.Level {
        get {
            record.levelReads.add(1, ordering: .relaxed)
            return level
        }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        record.lines.withLock { $0.append(("\(event.level) \(event.message)", event.file)) }
    }
}

/// The connection asks its logger's level once, when it is made: a logger taking trace lines gets every call and
/// reply, written from where the connection handles them; one that does not is never asked again.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs the dbus-daemon binary"))
struct BusTraceTests {
    /// Two calls answered by a connection logging at `level`: the trace lines, and the level reads the calls made.
    private func calls(at level: Logger.Level) async throws -> (lines: [(text: String, file: String)], reads: Int) {
        let record = LogRecord()
        let logger = Logger(label: "server") { _ in RecordingLogHandler(record: record, level: level) }
        let pair = try BusPair(sensorLevel: 0, serverLogger: logger)
        defer { pair.close() }
        let before = record.levelReads.load(ordering: .relaxed)
        for _ in 0..<2 {
            _ = try await pair.client.call(
                pair.server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "Echo",
                arguments: [.string("a")])
        }
        let reads = record.levelReads.load(ordering: .relaxed) - before
        return (record.lines.withLock { $0 }.filter { $0.text.hasPrefix("trace ") }, reads)
    }

    @Test func aTracingLoggerSeesEachCallAndReplyFromWhereTheyAreHandled() async throws {
        let traced = try await calls(at: .trace).lines
        #expect(traced.filter { $0.text == "trace ← call" }.count == 2)
        #expect(traced.filter { $0.text == "trace → reply" }.count == 2)
        let callsAndReplies = traced.filter { $0.text == "trace ← call" || $0.text == "trace → reply" }
        #expect(callsAndReplies.map(\.file).allSatisfy { $0.hasSuffix("ConnectionCore+Dispatch.swift") })
    }

    @Test func aLoggerAboveTraceIsNotAskedItsLevelForEachCall() async throws {
        let (lines, reads) = try await calls(at: .debug)
        #expect(lines.isEmpty)
        #expect(reads == 0)
    }
}
