import ControlProtocol
import LocalIO

/// The control socket as the tools use it: every call on a thread of its own (`OffPool`), every wait bounded by a
/// deadline, so no thread outlives the call that started it by more than its timeout.
struct ControlLink: Sendable {
    /// The socket's client.
    let client: ControlClient
    /// How long a command may go unanswered: `disconnect` waits for bluetoothd to drop each link, the others
    /// answer at once.
    let commandTimeout: Duration

    /// The response object of `request` (without `ok`), or the error `tool` reports: the socket's own refusal, no
    /// socket, or no answer in time.
    func send(_ request: [String: JSONValue], for tool: String) async throws(ToolError) -> [String: JSONValue] {
        let (client, deadline) = (client, ContinuousClock.now + commandTimeout)
        let outcome = await OffPool.run { () -> Result<String?, ControlClient.Unreachable> in
            var response: String?
            return Result { () throws(ControlClient.Unreachable) in
                _ = try client.stream(request, until: deadline) { line in
                    response = line
                    return false
                }
                return response
            }
        }
        let line: String?
        switch outcome {
        case .success(let answer): line = answer
        case .failure(let unreachable): throw unreachableError(unreachable, for: tool)
        }
        guard let line else {
            throw ToolError(tool, "no answer from \(client.path) within \(Self.spelled(commandTimeout))")
        }
        return try Self.answer(line, for: tool)
    }

    /// The first event from now on that `filter` matches, read from an `events` stream; `listening` runs once the
    /// stream is open (and before any event is looked at), so a caller can start what it waits for. Throws
    /// `ToolError` when no such event comes by `timeout`, the socket refuses or is gone, or the device stops.
    func firstEvent(
        matching filter: EventFilter, within timeout: Duration, for tool: String,
        listening: @escaping @Sendable () async -> Void
    ) async throws(ToolError) -> JSONValue {
        let (client, deadline) = (client, ContinuousClock.now + timeout)
        let request = ToolCall.waitForEvent(filter, timeout: timeout).request
        // The reading thread says once when the stream is open; `listening` runs here, in the caller's task, while
        // the thread reads on: the socket queues every event from the open on, so what `listening` starts cannot
        // beat the stream.
        let (opened, open) = AsyncStream<Void>.makeStream()
        async let watched = OffPool.run { () -> Result<Watch, ControlClient.Unreachable> in
            defer { open.finish() }
            var watch = Watch.waiting
            return Result { () throws(ControlClient.Unreachable) in
                let end = try client.stream(request, until: deadline) { line in
                    guard case .waiting = watch else {
                        guard let event = try? JSONValue(parsing: line), filter.matches(event) else { return true }
                        watch = .found(event)
                        return false
                    }
                    do throws(ToolError) { _ = try Self.answer(line, for: tool) } catch {
                        watch = .refused(error)
                        return false
                    }
                    watch = .listening
                    open.yield()
                    return true
                }
                if end == .closed, case .listening = watch { watch = .ended }
                return watch
            }
        }
        for await _ in opened {
            await listening()
            break
        }
        let outcome = await watched
        switch outcome {
        case .failure(let unreachable): throw unreachableError(unreachable, for: tool)
        case .success(.found(let event)): return event
        case .success(.refused(let error)): throw error
        case .success(.ended): throw ToolError(tool, "the device stopped before any \(filter.spelled) came")
        case .success(.waiting):
            throw ToolError(tool, "no answer from \(client.path) within \(Self.spelled(timeout))")
        case .success(.listening):
            throw ToolError(tool, "no \(filter.spelled) came within \(Self.spelled(timeout))")
        }
    }

    /// Where a wait stands.
    private enum Watch {
        /// Before the stream's first line.
        case waiting
        /// The stream is open; no match yet.
        case listening
        /// The event looked for.
        case found(JSONValue)
        /// The socket refused the stream.
        case refused(ToolError)
        /// The stream ended: the device stopped.
        case ended
    }

    /// A response line's object without `ok`, or its `error` as `tool`'s.
    static func answer(_ line: String, for tool: String) throws(ToolError) -> [String: JSONValue] {
        guard let object = (try? JSONValue(parsing: line))?.object else {
            throw ToolError(tool, "the control socket answered something that is not a JSON object: \(line)")
        }
        guard object["ok"] == .bool(true) else {
            throw ToolError(tool, object["error"]?.string ?? "the control socket refused it: \(line)")
        }
        return object.filter { $0.key != "ok" }
    }

    /// What an agent is told when the socket cannot be reached: the system's reason, and what serves the socket.
    private func unreachableError(_ unreachable: ControlClient.Unreachable, for tool: String) -> ToolError {
        ToolError(
            tool,
            "cannot reach the control socket (\(unreachable)): is `blemu run PROFILE --control \(client.path)` running?"
        )
    }

    /// "10 s", "0.5 s".
    static func spelled(_ duration: Duration) -> String {
        let milliseconds = duration / .milliseconds(1)
        return milliseconds.truncatingRemainder(dividingBy: 1000) == 0
            ? "\(Int(milliseconds / 1000)) s" : "\(milliseconds / 1000) s"
    }
}
