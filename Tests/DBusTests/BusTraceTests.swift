import BlueZTesting
import DBus
import Logging
import Synchronization
import Testing

/// Keeps the lines a logger writes, for a test to read.
private struct RecordingLogHandler: LogHandler {
    let lines: Mutex<[String]>.Shared
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.value.withLock { $0.append("\(event.level) \(event.message)") }
    }
}

extension Mutex {
    /// A lock a value type can hold and share.
    final class Shared: Sendable where Value: Sendable {
        let value: Mutex<Value>
        init(_ initial: Value) { value = Mutex(initial) }
    }
}

/// The connection asks its logger's level once: a logger taking trace lines still gets every call and reply, one
/// that does not gets none of them.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs the dbus-daemon binary"))
struct BusTraceTests {
    private func lines(at level: Logger.Level) async throws -> [String] {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let lines = Mutex<[String]>.Shared([])
        let logger = Logger(label: "server") { _ in RecordingLogHandler(lines: lines, logLevel: level) }
        let server = try BusConnection(.address(bus.address), logger: logger)
        let client = try bus.connect("client")
        defer {
            client.close()
            server.close()
        }
        try server.export(
            "/echo",
            [
                Interface(
                    "org.example.Echo1",
                    methods: [
                        Method("Echo", inputs: "s", outputs: "s") { call in
                            let text = call.arguments[0]
                            call.reply([text])
                        }
                    ])
            ])
        for _ in 0..<2 {
            _ = try await client.call(
                server.uniqueName, path: "/echo", interface: "org.example.Echo1", member: "Echo",
                arguments: [.string("a")])
        }
        return lines.value.withLock { $0 }.filter { $0.hasPrefix("trace ") }
    }

    @Test func aTracingLoggerSeesEachCallAndReply() async throws {
        let traced = try await lines(at: .trace)
        #expect(traced.filter { $0 == "trace ← call" }.count == 2)
        #expect(traced.filter { $0 == "trace → reply" }.count == 2)
    }

    @Test func aLoggerAboveTraceGetsNoneOfThem() async throws {
        #expect(try await lines(at: .debug).isEmpty)
    }
}
