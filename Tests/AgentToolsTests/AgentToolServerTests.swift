import AgentTools
import ControlProtocol
import Emulation
import Foundation
import LocalIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tools against a real control socket: answers are the socket's responses, errors its own words, waits end
/// by their deadline, and a socket that is missing or silent is an error result, never a hang.
@Suite(.timeLimit(.minutes(1)))
struct AgentToolServerTests {
    @Test func toolsAnswerWithTheSocketsResponseAndItsErrors() async throws {
        let device = try await ControlledDevice.start()
        let got = await device.call(.get, ["id": "battery-level"])
        #expect(got.isError == false && got["hex"] == "57", "\(got.text)")
        #expect(got["fields"]?.object?["percent"] == 87, "\(got.text)")
        #expect(got["ok"] == nil, "`ok` is the result's isError, not its content: \(got.text)")
        // The text is the same answer as JSON, for clients that read only text.
        #expect(try JSONValue(parsing: got.text)["hex"] == "57")

        let set = await device.call(.set, ["id": "battery-level", "fields": ["percent": 50]])
        #expect(set.isError == false && set["hex"] == "32", "\(set.text)")
        #expect(try await device.emulator.value(of: "battery-level") == [0x32])

        let unknown = await device.call(.get, ["id": "nope"])
        #expect(unknown.isError == true)
        #expect(unknown.text == "get: unknown characteristic `nope`")
        let badField = await device.call(.set, ["id": "battery-level", "fields": ["volts": 3]])
        #expect(
            badField.isError == true && badField.text == "set: battery-level has no field `volts`", "\(badField.text)")
        // Refused before the socket: the same shape of error.
        let refused = await device.call(.notify, ["id": "battery-level", "count": 0])
        #expect(refused.isError == true && refused.text.hasPrefix("notify: `count` must be"), "\(refused.text)")
        await device.stop()
    }

    @Test func describeAndTheProfileResourceAreTheProfileServed() async throws {
        let device = try await ControlledDevice.start()
        let described = await device.call(.describe)
        let profile = try #require(described["profile"]?.object, "\(described.text)")
        #expect(profile["name"] == "Polar H10 A1B2")
        #expect((profile["behaviour"]?.array ?? []).count >= 2, "the behaviour in words: \(described.text)")

        let resource = try await device.tools.read(AgentToolServer.profileURI)
        #expect(resource.mimeType == "application/json")
        #expect(try JSONValue(parsing: resource.text)["name"] == "Polar H10 A1B2")
        await #expect(throws: ToolError.self) { try await device.tools.read("blemu://nothing") }
        await device.stop()
    }

    @Test func recentEventsAreTheLatestThatMatchOldestFirst() async throws {
        let device = try await ControlledDevice.start()
        _ = await device.call(.set, ["id": "battery-level", "hex": "20"])
        _ = await device.call(.notify, ["id": "battery-level"])
        _ = await device.call(.set, ["id": "battery-level", "hex": "21"])
        _ = await device.call(.notify, ["id": "battery-level", "count": 2])
        let recent = await device.call(
            .recentEvents, ["type": "notification", "characteristic": "battery-level", "limit": 2])
        let values = (recent["events"]?.array ?? []).map { $0.object?["value"] }
        #expect(values == ["21", "21"], "\(recent.text)")
        // A set notifies as any change does (to nobody here): five in all.
        let all = await device.call(.recentEvents, ["type": "notification"])
        let allValues = (all["events"]?.array ?? []).map { $0.object?["value"] }
        #expect(allValues == ["20", "20", "21", "21", "21"], "\(all.text)")
        let none = await device.call(.recentEvents, ["type": "pairing"])
        #expect(none.isError == false && none["events"] == [], "\(none.text)")
        await device.stop()
    }

    @Test func waitForEventAnswersTheFirstMatchFromTheCallOn() async throws {
        let device = try await ControlledDevice.start()
        // Before the call: never the answer.
        _ = await device.call(.set, ["id": "battery-level", "hex": "28"])
        _ = await device.call(.notify, ["id": "battery-level"])
        let tools = device.tools
        let waited = await tools.call(
            .waitForEvent, ["type": "notification", "characteristic": "battery-level", "timeout_seconds": 20]
        ) {
            // Listening now: a request of another characteristic first, then the one waited for.
            _ = await tools.call(.notify, ["id": "heart-rate-measurement"])
            _ = await tools.call(.set, ["id": "battery-level", "fields": ["percent": 41]])
            _ = await tools.call(.notify, ["id": "battery-level"])
        }
        #expect(waited.isError == false, "\(waited.text)")
        #expect(waited["type"] == "notification" && waited["characteristic"] == "battery-level", "\(waited.text)")
        #expect(waited["value"] == "29", "\(waited.text)")
        await device.stop()
    }

    @Test func aWaitEndsAtItsTimeoutOrWhenTheDeviceStops() async throws {
        let device = try await ControlledDevice.start()
        let started = ContinuousClock.now
        let timedOut = await device.call(.waitForEvent, ["type": "pairing", "timeout_seconds": 0.3])
        let took = ContinuousClock.now - started
        #expect(timedOut.isError == true)
        #expect(timedOut.text == "wait_for_event: no `pairing` event came within 0.3 s")
        // Ended by the deadline, not by a line: a read left blocked would never return (30 s: a loaded machine).
        #expect(took >= .milliseconds(300) && took < .seconds(30), "\(took)")

        let control = device.control
        let stopped = await device.tools.call(.waitForEvent, ["type": "pairing", "timeout_seconds": 20]) {
            control.stop()
        }
        #expect(stopped.text == "wait_for_event: the device stopped before any `pairing` event came")
        await device.stop()
    }

    @Test func aMissingSocketIsAnErrorResultOfEveryTool() async throws {
        let path = try temporaryDirectory() + "/absent.sock"
        let tools = AgentToolServer(control: path, version: "test", logger: ControlledDevice.logger)
        for (tool, arguments) in [(AgentTool.counters, [:]), (.waitForEvent, ["type": "reset"] as [String: JSONValue])]
        {
            let result = await tools.call(tool, arguments)
            #expect(result.isError == true)
            #expect(
                result.text
                    == "\(tool.rawValue): cannot reach the control socket (\(path): No such file or directory): is "
                    + "`blemu run PROFILE --control \(path)` running?")
        }
        #expect(await tools.unreachable()?.contains("No such file or directory") == true)
        await #expect(throws: ToolError.self) { try await tools.read(AgentToolServer.profileURI) }
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    }

    @Test func aSocketThatNeverAnswersIsAnErrorOnceTheCommandTimesOut() async throws {
        // Listening, never accepting: the connection is made (the backlog holds it) and no answer ever comes.
        let directory = try temporaryDirectory()
        let path = directory + "/silent.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(SocketCalls.bindAndListen(listener, to: try #require(SocketCalls.unixAddress(path))))
        defer {
            close(listener)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let tools = AgentToolServer(
            control: path, version: "test", logger: ControlledDevice.logger, commandTimeout: .milliseconds(300))
        let started = ContinuousClock.now
        let result = await tools.call(.get, ["id": "battery-level"])
        #expect(result.isError == true && result.text == "get: no answer from \(path) within 0.3 s", "\(result.text)")
        // Far under the default 60 s: the 0.3 s given applied (a loaded machine takes seconds to get there).
        #expect(ContinuousClock.now - started < .seconds(30))
        let waited = await tools.call(.waitForEvent, ["type": "reset", "timeout_seconds": 0.3])
        #expect(waited.text == "wait_for_event: no answer from \(path) within 0.3 s", "\(waited.text)")
    }

    @Test func theEventsResourceIsTheLogsLastWholeLinesOrTheSocketsLatest() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/events.jsonl"
        let lines = (1...300).map { #"{"time":"t","type":"reset","n":\#($0)}"# }
        // The last line is still being written: not yet an event.
        try (lines.joined(separator: "\n") + "\n" + #"{"time":"t","ty"#).write(
            toFile: log, atomically: true, encoding: .utf8)
        let device = try await ControlledDevice.start(events: log)
        let fromFile = try await device.tools.read(AgentToolServer.eventsURI)
        #expect(fromFile.text == lines.suffix(256).map { $0 + "\n" }.joined())
        #expect(fromFile.mimeType == "application/jsonl")
        await device.stop()

        let live = try await ControlledDevice.start()
        _ = await live.call(.reset)
        let fromSocket = try await live.tools.read(AgentToolServer.eventsURI)
        let last = try JSONValue(parsing: String((fromSocket.text).split(separator: "\n").last ?? ""))
        #expect(last["type"] == "reset", "\(fromSocket.text)")
        await live.stop()
    }
}
