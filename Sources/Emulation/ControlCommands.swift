import ControlProtocol
import GATTModel
import GATTProfile
import Peripheral

/// The control socket's commands, one JSON object per line in and out, independent of the socket:
///
/// | request | response (besides `"ok":true`) |
/// |---|---|
/// | `{"command":"get","id":"battery-level"}` | `id`, `hex`, `fields` (decoded by the layout) |
/// | `{"command":"set","id":"battery-level","hex":"50"}` or `"fields":{"percent":80}` | `id`, `hex` |
/// | `{"command":"notify","id":"battery-level"}` (`"count":N` sends it N times, 1...100000; `"central":ID` to one) | `id`, `hex` |
/// | `{"command":"centrals"}` | `centrals`: `[{id, maximumUpdateValueLength, subscriptions}]`; `disconnects`: `[{central, reason?, message?}]`, the latest 16, oldest first |
/// | `{"command":"disconnect"}` (`"central":ID` drops only that connected central's link) | `disconnected`: the centrals whose link bluetoothd dropped |
/// | `{"command":"fault","operation":"read","id":"x","nth":2,"error":"unlikely-error"}` (or `"delayMs":500`) | |
/// | `{"command":"fault","operation":"read","nth":1,"effect":"disconnect"}` (or `stop-advertising`), after answering | |
/// | `{"command":"advertising","action":"start"}` (or `stop`) | |
/// | `{"command":"schedules"}`, or `"action":"pause"` / `"resume"` with an optional `"id"` | `schedules`: `[{id, intervalMs, paused, running}]` |
/// | `{"command":"pairing"}` | `pairings`: `[{central, method, passkey?, accepted}]`, the latest 16, oldest first |
/// | `{"command":"counters"}` | `counters` |
/// | `{"command":"reset"}` | `changed`: the ids whose value went back to the profile's |
/// | `{"command":"events"}` | `events`: the latest 256 event-log records as objects, oldest first |
/// | `{"command":"events","follow":true}` | `following`: then one event-log line per event from now on (`ControlServer`) |
/// | `{"command":"status"}` | `state`, `advertising`, `adapter`, `bluez`, `advertisement` (`AdvertisementJSON`) |
/// | `{"command":"handle","id":"control-point"}` (`ids`, `operations`, `deadlineMs`, `fallback`) | `handling`: then request lines out, answer lines in (`RequestHandlers`) |
/// | `{"command":"describe"}` | `profile`: the profile as `blemu show --json` prints it (`ProfileJSON`), its behaviour in words included |
///
/// `set` with `fields` changes only the named fields of the current value. A running schedule of that characteristic
/// writes its generated fields again at its next tick; `schedules` `pause` holds it so a set value stays. Anything wrong gets
/// `{"ok":false,"error":"..."}`.
struct ControlCommands: Sendable {
    let emulator: Emulator

    /// A request line's object, parsed once for `feedToFollow` and `respond`; nil when it is not a JSON object.
    static func request(in line: String) -> [String: JSONValue]? { (try? JSONValue(parsing: line))?.object }

    /// The feed to stream when `request` asks to follow the events (`{"command":"events","follow":true}`), else
    /// nil: such a request turns its connection into a stream (`ControlServer`), so it is told apart before
    /// answering. Nil too when the emulator records no events; `respond` then says so.
    func feedToFollow(_ request: [String: JSONValue]?) -> EventFeed? {
        guard let request, request["command"]?.string == ControlCommand.events.rawValue,
            request["follow"]?.bool == true
        else { return nil }
        return emulator.log?.feed
    }

    /// The response line (without newline) for a request already parsed (nil: the line was not a JSON object).
    func respond(to request: [String: JSONValue]?) async -> String {
        let response: [String: JSONValue]
        do {
            guard let object = request else { throw ControlError.badRequest("not a JSON object") }
            response = try await run(object).merging(["ok": .bool(true)]) { _, new in new }
        } catch let error as ControlError {
            response = ["ok": .bool(false), "error": .string(error.description)]
        } catch {
            response = ["ok": .bool(false), "error": .string("\(error)")]
        }
        return JSONValue.object(response).text
    }

    private func run(_ request: [String: JSONValue]) async throws(ControlError) -> [String: JSONValue] {
        guard let name = request["command"]?.string else { throw .badRequest("missing `command`") }
        guard let command = ControlCommand(rawValue: name) else {
            let names = ControlCommand.allCases.map(\.rawValue).joined(separator: ", ")
            throw .badRequest("unknown command `\(name)` (commands: \(names))")
        }
        switch command {
        case .get:
            let id = try string("id", in: request)
            return describe(id, try await emulator.value(of: id))
        case .set:
            let id = try string("id", in: request)
            let value = try await newValue(for: id, from: request)
            try await emulator.set(value, for: id)
            return describe(id, value)
        case .notify:
            let id = try string("id", in: request)
            // A burst in one line: a script (or the benchmark) measures the notification path, not the socket.
            let count = request["count"].map { $0.number ?? -1 } ?? 1
            guard count == count.rounded(), (1...Double(Emulator.outboxCapacity)).contains(count) else {
                throw .badValue("`count` must be a whole number from 1 to \(Emulator.outboxCapacity)")
            }
            let times = Int(count)
            let central = try request["central"].map { value throws(ControlError) -> String in
                guard let central = value.string else { throw .badValue("`central` must be a string") }
                return central
            }
            try await emulator.notify(id, to: central, times: times)
            return describe(id, try await emulator.value(of: id))
        case .centrals:
            let centrals = await emulator.centrals().map {
                JSONValue.object([
                    "id": .string($0.central.id),
                    "maximumUpdateValueLength": .integer(Int64($0.central.maximumUpdateValueLength)),
                    "subscriptions": .array($0.subscriptions.map(JSONValue.string)),
                ])
            }
            let disconnects = await emulator.disconnects.map { disconnect in
                var members: [String: JSONValue] = ["central": .string(disconnect.central)]
                if let reason = disconnect.reason {
                    members["reason"] = .string(reason.code)
                    members["message"] = .string(reason.message)
                }
                return JSONValue.object(members)
            }
            return ["centrals": .array(centrals), "disconnects": .array(disconnects)]
        case .disconnect:
            let central = try request["central"].map { value throws(ControlError) -> String in
                guard let central = value.string else { throw .badValue("`central` must be a string") }
                return central
            }
            return ["disconnected": .array(try await emulator.disconnect(central).map(JSONValue.string))]
        case .fault:
            try await emulator.inject(try fault(from: request))
            return [:]
        case .advertising:
            switch request["action"]?.string {
            case "start": try await emulator.setAdvertising(true)
            case "stop": try await emulator.setAdvertising(false)
            default: throw .badRequest("`advertising` needs `action`: start or stop")
            }
            return [:]
        case .schedules:
            let id = try request["id"].map { value throws(ControlError) -> String in
                guard let id = value.string else { throw .badValue("`id` must be a string") }
                return id
            }
            switch request["action"]?.string {
            case nil: break
            case "pause": try await emulator.pauseSchedules(id)
            case "resume": try await emulator.resumeSchedules(id)
            default: throw .badRequest("`schedules` takes `action`: pause or resume (or none, to list them)")
            }
            let schedules = await emulator.schedules().map {
                JSONValue.object([
                    "id": .string($0.characteristicID), "intervalMs": .integer(Int64($0.interval / .milliseconds(1))),
                    "recorded": .bool($0.isRecordedPace), "paused": .bool($0.isPaused), "running": .bool($0.isRunning),
                ])
            }
            return ["schedules": .array(schedules)]
        case .pairing:
            let pairings = await emulator.pairings.map { pairing in
                var entry: [String: JSONValue] = [
                    "central": .string(pairing.central), "method": .string(pairing.method.rawValue),
                    "accepted": .bool(pairing.accepted),
                ]
                if let passkey = pairing.passkey { entry["passkey"] = .string(PairingEvent.spelled(passkey)) }
                return JSONValue.object(entry)
            }
            return ["pairings": .array(pairings)]
        case .counters:
            let counters = await emulator.counters()
            let (requests, notifications) = (counters.requests, counters.notifications)
            let numbers: [String: Int] = [
                "requests": requests.requests, "answered": requests.answered, "responded": requests.responded,
                "rejected": requests.rejected, "expired": requests.expired, "dropped": requests.dropped,
                "writesWithoutResponse": requests.withoutReply,
                "notificationsQueued": notifications.accepted, "notificationsSent": notifications.sent,
                "queueFull": notifications.refusedFull, "waiting": counters.waiting,
                "outboxDropped": counters.outboxDropped,
                "notificationsDropped": notifications.dropped, "eventLinesLost": counters.eventLinesLost,
                "notificationsToNobody": notifications.withoutSubscribers,
                "handlerRequests": counters.handlers.forwarded, "handlerAnswered": counters.handlers.answered,
                "handlerFallbacks": counters.handlers.fallbacks, "handlerRefused": counters.handlers.refused,
            ]
            return ["counters": .object(numbers.mapValues { .integer(Int64($0)) })]
        case .reset:
            return ["changed": .array(await emulator.reset().map(JSONValue.string))]
        case .events:
            guard let feed = emulator.log?.feed else {
                throw .failed("no events are recorded: `blemu run` records them with --control or --events")
            }
            if request["follow"] != nil && request["follow"]?.bool == nil {
                throw .badValue("`follow` must be true or false")
            }
            let events = feed.recent.compactMap { try? JSONValue(parsing: EventLineEncoder.encode($0)) }
            return ["events": .array(events)]
        case .describe:
            return ["profile": ProfileJSON.document(emulator.profile)]
        case .state:
            if let assignments = request["set"] {
                guard let object = assignments.object else {
                    throw .badRequest("`set` must be an object of variable names and values")
                }
                var values: [(String, FieldValue)] = []
                for (name, raw) in object.sorted(by: { $0.key < $1.key }) {
                    guard let type = await emulator.stateType(of: name) else {
                        throw .badValue("unknown state variable `\(name)`")
                    }
                    guard let value = Self.fieldValue(raw, for: type) else {
                        throw .badValue("`\(name)`: \(raw.text) is not a \(type.name)")
                    }
                    // Checked strictly, as `set` is: a person asked for that value.
                    do { _ = try ValueLayout.encode(value, as: FieldSpec(name: name, type: type)) } catch {
                        throw .badValue(error.description)
                    }
                    values.append((name, value))
                }
                await emulator.setState(values)
            }
            let state = await emulator.protocolState()
            return ["state": .object(state.mapValues(\.json))]
        case .handle:
            // Answered by `ControlServer`, which turns the connection into the request stream.
            throw .badRequest("`handle` streams on its own connection; send it as a connection's first line")
        case .status:
            let host = await emulator.hostStatus()
            return [
                "state": .string(host.state), "advertising": .bool(host.advertising),
                "adapter": host.adapter.map(JSONValue.string) ?? .null,
                "bluez": host.bluez.map(JSONValue.string) ?? .null,
                "advertisement": AdvertisementJSON.document(for: emulator.profile.advertisement),
            ]
        }
    }

    /// The claim a `handle` request makes: `id` (one characteristic) or `ids`, `operations` (`read`, `write`;
    /// both by default), `deadlineMs` (at most, and by default, `RequestHandlers.longestDeadline`), and `fallback`
    /// (`profile`, the default, or an ATT error).
    func claim(from request: [String: JSONValue]) throws(ControlError) -> RequestHandlers.Claim {
        var ids: [String] = []
        if let id = request["id"]?.string { ids.append(id) }
        if let list = request["ids"] {
            guard let names = list.strings else { throw .badValue("`ids` must be a list of characteristic ids") }
            ids += names
        }
        guard !ids.isEmpty else { throw .badRequest("`handle` needs `id` or `ids`: the characteristics to answer") }
        for id in ids where emulator.profile.characteristic(id: id) == nil {
            throw .badValue("no characteristic `\(id)` in the profile")
        }
        var operations: Set<AttributeOperation> = [.read, .write]
        if let list = request["operations"] {
            let wrong = ControlError.badValue("`operations` must list read, write or both")
            guard let names = list.strings, !names.isEmpty else { throw wrong }
            operations = []
            for name in names {
                guard let operation = AttributeOperation(rawValue: name), [.read, .write].contains(operation) else {
                    throw wrong
                }
                operations.insert(operation)
            }
        }
        let longest = emulator.requestHandlers.longestDeadline
        var deadline = longest
        if let raw = request["deadlineMs"] {
            guard let milliseconds = raw.integer, milliseconds > 0,
                .milliseconds(milliseconds) <= longest
            else {
                throw .badValue(
                    "`deadlineMs` must be from 1 to \(longest / .milliseconds(1)), under the request deadline")
            }
            deadline = .milliseconds(milliseconds)
        }
        var fallback = RequestHandlers.Fallback.profile
        if let raw = request["fallback"], raw.string != "profile" {
            guard let error = ATTError(json: raw) else {
                throw .badValue("`fallback` must be `profile` or an ATT error (a name, 0xNN, or a code)")
            }
            fallback = .error(error)
        }
        return RequestHandlers.Claim(
            characteristicIDs: Set(ids), operations: operations, deadline: deadline, fallback: fallback)
    }

    /// The line that tells a handler its claim holds: what it answers, its deadline and fallback.
    static func claimed(_ claim: RequestHandlers.Claim) -> String {
        let fallback: JSONValue =
            switch claim.fallback {
            case .profile: .string("profile")
            case .error(let error): .string("0x" + Hex.byte(error.rawValue))
            }
        return JSONValue.object([
            "ok": .bool(true), "handling": .array(claim.characteristicIDs.sorted().map(JSONValue.string)),
            "operations": .array(claim.operations.map(\.rawValue).sorted().map(JSONValue.string)),
            "deadlineMs": .integer(Int64(claim.deadline / .milliseconds(1))), "fallback": fallback,
        ]).text + "\n"
    }

    private func string(_ key: String, in request: [String: JSONValue]) throws(ControlError) -> String {
        guard let value = request[key]?.string else { throw .badRequest("missing `\(key)`") }
        return value
    }

    private func describe(_ id: String, _ value: [UInt8]) -> [String: JSONValue] {
        var response: [String: JSONValue] = ["id": .string(id), "hex": .string(StateStore.hex(value))]
        if let layout = emulator.profile.characteristic(id: id)?.layout, let fields = layout.decode(value) {
            var decoded: [String: JSONValue] = [:]
            for (spec, field) in zip(layout.fields, fields) { decoded[spec.name] = field.json }
            response["fields"] = .object(decoded)
        }
        return response
    }

    private func newValue(for id: String, from request: [String: JSONValue]) async throws(ControlError) -> [UInt8] {
        if let hex = request["hex"]?.string {
            guard let bytes = Hex.bytes(hex) else { throw .badValue("`hex` is not hex: \(hex)") }
            return bytes
        }
        guard let fields = request["fields"]?.object else {
            throw .badRequest("`set` needs `hex` or `fields`")
        }
        guard let layout = emulator.profile.characteristic(id: id)?.layout else {
            _ = try await emulator.value(of: id)  // unknown id first, then the missing layout
            throw .badValue("\(id) has no fields; use `hex`")
        }
        var updates: [(index: Int, value: FieldValue)] = []
        for (name, raw) in fields.sorted(by: { $0.key < $1.key }) {
            guard let index = layout.index(of: name) else { throw .badValue("\(id) has no field `\(name)`") }
            guard let value = Self.fieldValue(raw, for: layout.fields[index].type) else {
                throw .badValue("`\(name)`: \(raw.text) is not a \(layout.fields[index].type.name)")
            }
            updates.append((index, value))
        }
        // Checked strictly: the composer would clamp an out-of-range number, but a person asked for that value.
        for (index, value) in updates {
            do { _ = try ValueLayout.encode(value, as: layout.fields[index]) } catch {
                throw .badValue(error.description)
            }
        }
        let current = try await emulator.value(of: id)
        return ValueComposer.compose(updates, into: current, layout: layout).value
    }

    private static func fieldValue(_ raw: JSONValue, for type: FieldType) -> FieldValue? {
        switch type {
        case .utf8: return raw.string.map(FieldValue.text)
        case .bytes: return raw.string.flatMap(Hex.bytes).map(FieldValue.bytes)
        case .flags:
            if raw.array != nil { return raw.strings.map(FieldValue.flags) }
            return raw.integer.map { .integer(Int64($0)) }
        // A 0 or 1 is a flag too, as JSONSerialization's NSNumber let it be.
        case .boolean:
            return (raw.bool ?? raw.integer.flatMap { [0, 1].contains($0) ? $0 == 1 : nil }).map { .boolean($0) }
        default:
            guard let number = raw.number ?? raw.string.flatMap(Double.init) else { return nil }
            return number == number.rounded() && abs(number) < 1e15 ? .integer(Int64(number)) : .real(number)
        }
    }

    private func fault(from request: [String: JSONValue]) throws(ControlError) -> Fault {
        guard let operationName = request["operation"]?.string,
            let operation = AttributeOperation(rawValue: operationName), operation == .read || operation == .write
        else { throw .badRequest("`fault` needs `operation`: read or write") }
        let nth = request["nth"]?.integer ?? 1
        guard nth >= 1 else { throw .badValue("`nth` must be 1 or more") }
        let trigger = Fault.Trigger.request(operation, characteristicID: request["id"]?.string, nth: nth)
        switch request["effect"]?.string {
        case nil: break
        case "disconnect": return Fault(trigger: trigger, effect: .disconnect)
        case "stop-advertising": return Fault(trigger: trigger, effect: .stopAdvertising)
        case let other?: throw .badValue("`effect` must be disconnect or stop-advertising, not `\(other)`")
        }
        if let milliseconds = request["delayMs"]?.integer {
            guard milliseconds >= 0 else { throw .badValue("`delayMs` must not be negative") }
            return Fault(trigger: trigger, effect: .delay(.milliseconds(milliseconds)))
        }
        guard let error = request["error"].flatMap(ATTError.init(json:)) else {
            throw .badValue("`fault` needs `error` (a name, 0x80, or a code) or `delayMs`")
        }
        return Fault(trigger: trigger, effect: .reject(error))
    }
}
