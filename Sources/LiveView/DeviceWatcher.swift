import ControlProtocol
import Logging

/// What every open page sees of one device: the watcher asks the control socket for the whole state once (a page
/// opened late starts from it), then pushes each event the moment the device records it (`events` with `follow`)
/// and whatever the polls find changed. It watches only while a page is open: with none, it holds no connection and
/// asks the device nothing.
actor DeviceWatcher {
    /// The control socket's path.
    let control: String
    /// The event log file the device writes (`--events`), whose tail a snapshot starts from instead of the socket's
    /// latest 256; nil to use the socket's.
    let eventLog: String?
    /// How often values, centrals, counters, schedules and pairing steps are asked for while a page is open.
    let pollInterval: Duration
    private let logger: Logger

    private var pages: [Int: PageOutbox] = [:]
    private var nextPage = 0
    private var watching: Task<Void, Never>?
    /// The last state sent, by key (`profile`, `status`, `values`, ...): what a page opened now starts from.
    private var state: [String: JSONValue] = [:]
    private var events: [JSONValue] = []
    /// Events followed before the snapshot is sent: sent after it, those already in it left out.
    private var early: [JSONValue]? = []
    private var unreachable: String?
    /// Why the event stream of this round of watching ended, when it ended on its own: the round ends too, and the
    /// next starts from a fresh snapshot, since pages would otherwise miss every event from then on.
    private var streamLost: String?

    /// The most events a snapshot carries.
    static let snapshotEvents = 2000
    /// The messages a page may fall behind by before it is closed: a stalled tab costs bounded memory, and it
    /// reconnects to a fresh snapshot rather than to a state with messages missing.
    static let pageBacklog = 8192

    /// A watcher of the device whose control socket is `control`.
    init(control: String, eventLog: String?, pollInterval: Duration = .milliseconds(250), logger: Logger) {
        self.control = control
        self.eventLog = eventLog
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// A new page, whose messages go to `outbox`, starting with the current state when there is one: its id.
    func attach(_ outbox: PageOutbox) -> Int {
        let id = nextPage
        nextPage += 1
        pages[id] = outbox
        if let unreachable {
            send(Self.unreachableMessage(unreachable), to: id)
        } else if early == nil {
            send(snapshotMessage(), to: id)
        }
        if watching == nil {
            watching = Task {
                await self.watch()
                self.stopped()
            }
        }
        return id
    }

    /// The page `id` went away: its messages end. With no page left the watching ends at its next poll (a page that
    /// opens before then, a reload, finds it still watching: nothing is interrupted on the way).
    func detach(_ id: Int) {
        pages.removeValue(forKey: id)?.close()
    }

    /// The answer to a page's command `text` sent while `PageSocket.waitingCommands` others waited: it is answered
    /// at once, by the page's own reader.
    static func busyAnswer(to text: String) -> String {
        var answer: [String: JSONValue] = [
            "type": .string("answer"), "response": Self.refusal("too many commands waiting"),
        ]
        if let message = (try? JSONValue(parsing: text))?.object {
            answer["seq"] = message["seq"]
            answer["request"] = message["request"]
        }
        return JSONValue.object(answer).text
    }

    /// A page's message: a `command` is sent to the device as the control protocol's own request, on a connection
    /// of its own (a slow `disconnect` must not hold the polls), and its answer goes back to that page only.
    func received(_ text: String, from id: Int) async {
        guard let message = (try? JSONValue(parsing: text))?.object, message["type"]?.string == "command",
            let request = message["request"]?.object
        else {
            send(
                JSONValue.object(["type": .string("answer"), "response": Self.refusal("not a command message")]).text,
                to: id)
            return
        }
        var answer: [String: JSONValue] = ["type": .string("answer"), "request": .object(request)]
        answer["seq"] = message["seq"]
        if request["command"]?.string == ControlCommand.events.rawValue, request["follow"] != nil {
            answer["response"] = Self.refusal("the view follows the events itself; `follow` is not sent")
        } else {
            let channel = ControlChannel(path: control)
            do {
                answer["response"] = .object(try await channel.send(request, timeout: .seconds(60)))
            } catch {
                answer["response"] = Self.refusal("\(error)")
            }
            await channel.close()
        }
        send(JSONValue.object(answer).text, to: id)
    }

    /// Watches while a page is open: a snapshot, then events and polls; when the device cannot be reached, says so to
    /// every page and tries again each second.
    private func watch() async {
        while !pages.isEmpty {
            let channel = ControlChannel(path: control)
            let follower = ControlChannel(path: control)
            early = []
            streamLost = nil
            let following = Task {
                var reason = "the device closed it"
                do {
                    try await follower.follow(["command": .string("events"), "follow": .bool(true)]) { line in
                        await self.followed(line)
                    }
                } catch { reason = "\(error)" }
                self.lost(reason)
            }
            var failed = false
            do {
                try await snapshot(from: channel)
                var round = 0
                while !pages.isEmpty {
                    try await Task.sleep(for: pollInterval)
                    if let streamLost {
                        throw ControlChannel.Failure(description: "the device's event stream ended: \(streamLost)")
                    }
                    round += 1
                    // The status only changes with the state or advertising: each second is soon enough.
                    try await poll(channel, status: round % 4 == 0)
                }
            } catch {
                failed = true
                if !pages.isEmpty && unreachable == nil {
                    unreachable = "\(error)"
                    broadcast(Self.unreachableMessage("\(error)"))
                }
                logger.debug("device unreachable: \(error)")
            }
            // The stream's read is ended by shutting its socket down, never by cancelling it (`ControlChannel`).
            await follower.interrupt("the view stopped following")
            await following.value
            await channel.close()
            if failed && !pages.isEmpty { try? await Task.sleep(for: .seconds(1)) }
        }
    }

    /// The watching ended with the last page: a page opened later starts it again, from a fresh snapshot.
    private func stopped() {
        watching = nil
        early = []
        unreachable = nil
        if !pages.isEmpty {
            watching = Task {
                await self.watch(); self.stopped()
            }
        }
    }

    /// Asks for the whole state and sends it to every page as a `snapshot`.
    private func snapshot(from channel: ControlChannel) async throws {
        let profile = try await ask(channel, ["command": .string("describe")])
        var fresh: [String: JSONValue] = ["profile": profile["profile"] ?? .null]
        fresh["status"] = .object(try await ask(channel, ["command": .string("status")]))
        fresh["values"] = .object(try await values(from: channel, profile: profile["profile"]))
        for (key, value) in try await polled(from: channel) { fresh[key] = value }
        let recent = try await ask(channel, ["command": .string("events")])["events"]?.array ?? []
        events = Array((EventLogTail.read(eventLog, last: Self.snapshotEvents) ?? recent).suffix(Self.snapshotEvents))
        state = fresh
        unreachable = nil
        let followed = early ?? []
        early = nil
        broadcast(snapshotMessage())
        // Events followed while the snapshot was asked for: the ones it already holds are not sent twice.
        let held = Set(events.suffix(followed.count + 256))
        for event in followed where !held.contains(event) { record(event) }
    }

    /// Polls what changes without an event of its own and sends an `update` with the keys that changed.
    private func poll(_ channel: ControlChannel, status: Bool) async throws {
        var changed: [String: JSONValue] = [:]
        var fresh = try await polled(from: channel)
        fresh["values"] = .object(try await values(from: channel, profile: state["profile"]))
        if status { fresh["status"] = .object(try await ask(channel, ["command": .string("status")])) }
        for (key, value) in fresh where state[key] != value {
            if key == "values", let old = state[key]?.object, let new = value.object {
                // Only the characteristics whose value changed.
                changed[key] = .object(new.filter { old[$0.key] != $0.value })
            } else {
                changed[key] = value
            }
            state[key] = value
        }
        guard !changed.isEmpty else { return }
        changed["type"] = .string("update")
        broadcast(JSONValue.object(changed).text)
    }

    /// `centrals`, `counters`, `schedules`, `pairings` and the device's state `variables`, as the control socket
    /// answers them.
    private func polled(from channel: ControlChannel) async throws -> [String: JSONValue] {
        let centrals = try await ask(channel, ["command": .string("centrals")])
        return [
            "centrals": .object(centrals.filter { $0.key != "ok" }),
            "counters": try await ask(channel, ["command": .string("counters")])["counters"] ?? .null,
            "schedules": try await ask(channel, ["command": .string("schedules")])["schedules"] ?? .null,
            "pairings": try await ask(channel, ["command": .string("pairing")])["pairings"] ?? .null,
            "variables": try await ask(channel, ["command": .string("state")])["state"] ?? .null,
        ]
    }

    /// Every characteristic's `get` answer (`hex`, `fields`), by id.
    private func values(from channel: ControlChannel, profile: JSONValue?) async throws -> [String: JSONValue] {
        var values: [String: JSONValue] = [:]
        for service in profile?["services"]?.array ?? [] {
            for characteristic in service["characteristics"]?.array ?? [] {
                guard let id = characteristic["id"]?.string else { continue }
                let answer = try await ask(channel, ["command": .string("get"), "id": .string(id)])
                values[id] = .object(answer.filter { $0.key == "hex" || $0.key == "fields" })
            }
        }
        return values
    }

    /// The response to `request`; throws when the device refuses it, since every request here is one it serves.
    private func ask(_ channel: ControlChannel, _ request: [String: JSONValue]) async throws -> [String: JSONValue] {
        let response = try await channel.send(request)
        guard response["ok"] == .bool(true) else {
            throw ControlChannel.Failure(
                description: "\(request["command"]?.string ?? "?"): \(response["error"]?.string ?? "refused")")
        }
        return response
    }

    /// The event stream ended (also when the watching ends it: the round is over then anyway).
    private func lost(_ reason: String) {
        streamLost = reason
        logger.debug("events stream: \(reason)")
    }

    /// An event line from the device's stream.
    private func followed(_ line: String) {
        guard let event = try? JSONValue(parsing: line) else { return }
        if early != nil {
            early?.append(event)
        } else {
            record(event)
        }
    }

    private func record(_ event: JSONValue) {
        events.append(event)
        if events.count > Self.snapshotEvents * 2 { events.removeFirst(events.count - Self.snapshotEvents) }
        broadcast(JSONValue.object(["type": .string("event"), "event": event]).text)
    }

    private func snapshotMessage() -> String {
        var message = state
        message["type"] = .string("snapshot")
        message["control"] = .string(control)
        message["events"] = .array(Array(events.suffix(Self.snapshotEvents)))
        return JSONValue.object(message).text
    }

    private static func unreachableMessage(_ error: String) -> String {
        JSONValue.object(["type": .string("device"), "reachable": .bool(false), "error": .string(error)]).text
    }

    private static func refusal(_ reason: String) -> JSONValue {
        .object(["ok": .bool(false), "error": .string(reason)])
    }

    private func broadcast(_ text: String) {
        for id in pages.keys { send(text, to: id) }
    }

    /// Sends `text` to page `id`; a page too far behind, or gone, is forgotten here.
    private func send(_ text: String, to id: Int) {
        guard let delivery = pages[id]?.send(text), delivery != .queued else { return }
        pages.removeValue(forKey: id)
        if delivery == .behind {
            logger.info("a page fell \(Self.pageBacklog) messages behind: closed; it reconnects to a fresh snapshot")
        }
    }
}
