import ControlProtocol
import Emulation
import Foundation
import GATTModel
import LocalIO
import Peripheral
import PeripheralTesting
import Synchronization
import Testing

/// A handler as a program is one: its own connection to the control socket, lines out and lines in.
final class HandlerConnection: Sendable {
    private let fd: Int32
    private let framed = Mutex((framer: LineFramer(maximumLength: ControlCommand.maximumLineLength), lines: [String]()))

    /// Connects and sends the claim.
    init(path: String, claim: [String: JSONValue]) throws {
        guard let address = SocketCalls.unixAddress(path) else { throw HandlerTestError("path too long") }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0, SocketCalls.connect(fd, to: address) else { throw HandlerTestError("cannot connect") }
        send(JSONValue.object(claim.merging(["command": .string("handle")]) { new, _ in new }).text)
    }

    /// Sends one line.
    func send(_ line: String) { _ = SocketCalls.sendAll(fd, (line + "\n").utf8) }

    /// Answers request `number` with `members` beside `answer`.
    func answer(_ number: Int, _ members: [String: JSONValue] = [:]) {
        send(JSONValue.object(members.merging(["answer": .integer(Int64(number))]) { new, _ in new }).text)
    }

    /// The next line blemu sends, parsed; read on a thread of its own (`offPool`).
    func next() async throws -> [String: JSONValue] {
        try await offPool { [self] in
            while true {
                if let line = framed.withLock({ $0.lines.isEmpty ? nil : $0.lines.removeFirst() }) {
                    return try JSONValue(parsing: line).object ?? [:]
                }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard count > 0 else { throw HandlerTestError("connection closed") }
                framed.withLock { state in
                    for case .line(let text) in state.framer.append(buffer[..<count]) { state.lines.append(text) }
                }
            }
        }
    }

    /// The next request line's number, after checking it is `operation` on `id`.
    func nextRequest(_ operation: String, on id: String) async throws -> (Int, [String: JSONValue]) {
        let line = try await next()
        #expect(line["operation"]?.string == operation && line["id"]?.string == id, "\(line)")
        return (line["request"]?.integer ?? -1, line)
    }

    /// Closes the connection: the handler crashed or quit.
    func close() { SocketCalls.close(fd) }
}

struct HandlerTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Handlers over the control socket: each request answered once whatever the handler does (answers, errs, stalls,
/// dies, floods, garbles, answers twice), on the in-memory backend with a real socket between blemu and the handler.
@Suite(.timeLimit(.minutes(1))) struct RequestHandlersTests {
    let controlPoint = "heart-rate-control-point"

    private func counters(_ client: ControlClient) async throws -> [String: Int] {
        let response = try await offPool { try client.send(["command": "counters"]) }
        let object = try JSONValue(parsing: response)["counters"]?.object ?? [:]
        return object.compactMapValues(\.integer)
    }

    private func outcomes(_ rig: Rig) -> [String] {
        rig.recorder.records.compactMap {
            if case .handler(_, _, let outcome) = $0.event { outcome } else { nil }
        }
    }

    @Test func handlerAnswersReadsAndWritesInsteadOfTheProfile() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let handler = try HandlerConnection(
            path: server.path, claim: ["ids": .array([.string("body-sensor-location"), .string(controlPoint)])])
        let claimed = try await handler.next()
        #expect(claimed["ok"] == .bool(true) && claimed["fallback"] == .string("profile"), "\(claimed)")
        #expect(claimed["handling"]?.strings == ["body-sensor-location", controlPoint])
        // 0.8 of the rig's request deadline (the manager's default, 4.5 s).
        #expect(claimed["deadlineMs"] == .integer(3600))
        let central = VirtualCentral(connectingTo: rig.backend)

        // A read gets the handler's value.
        let read = Task { try await central.read("body-sensor-location") }
        let (first, readLine) = try await handler.nextRequest("read", on: "body-sensor-location")
        #expect(readLine["offset"] == .integer(0) && readLine["central"]?.string == central.central.id)
        #expect(readLine["mtu"] == .integer(Int64(central.attMTU)))
        handler.answer(first, ["hex": "07"])
        #expect(try await read.value == [7])
        // An answer without a value serves the stored one: the handler's 07 answered one read, stored nothing.
        let stored = Task { try await central.read("body-sensor-location") }
        let (again, _) = try await handler.nextRequest("read", on: "body-sensor-location")
        handler.answer(again)
        #expect(try await stored.value == [1])

        // A write the profile would refuse (its rule allows only 01) is accepted and stored by the handler...
        let accepted = Task { try await central.write([0x02], to: controlPoint) }
        let (second, writeLine) = try await handler.nextRequest("write", on: controlPoint)
        #expect(writeLine["hex"] == .string("02"))
        handler.answer(second)
        try await accepted.value
        #expect(
            try await offPool { try client.send(["command": "get", "id": .string(controlPoint)]) }.contains("\"02\""))

        // ...a write it would accept is refused with the handler's error...
        let refused = Task { try await central.write([0x01], to: controlPoint) }
        let (third, _) = try await handler.nextRequest("write", on: controlPoint)
        handler.answer(third, ["error": "0x81"])
        #expect(await refused.result.attError == ATTError(rawValue: 0x81))

        // ...and "profile" hands one request back to the profile's own rule.
        let profiled = Task { try await central.write([0x03], to: controlPoint) }
        let (fourth, _) = try await handler.nextRequest("write", on: controlPoint)
        handler.answer(fourth, ["profile": .bool(true)])
        #expect(await profiled.result.attError == ATTError(rawValue: 0x80))

        #expect(outcomes(rig) == ["answered", "answered", "answered", "error 0x81 Application Error", "profile"])
        let numbers = try await counters(client)
        #expect(numbers["handlerRequests"] == 5 && numbers["handlerAnswered"] == 5 && numbers["handlerFallbacks"] == 0)
        #expect(numbers["requests"] == 5 && numbers["answered"] == 5, "\(numbers)")
        handler.close()
    }

    @Test func lateHandlerGetsTheFallbackAndItsAnswerIsRefused() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let handler = try HandlerConnection(
            path: server.path,
            claim: ["id": .string(controlPoint), "deadlineMs": 1000, "fallback": "unlikely-error"])
        #expect(try await handler.next()["fallback"] == .string("0x0E"))
        let central = VirtualCentral(connectingTo: rig.backend)

        let write = Task { try await central.write([0x01], to: controlPoint) }
        let (number, _) = try await handler.nextRequest("write", on: controlPoint)
        rig.clock.advance(by: .milliseconds(1000))
        #expect(await write.result.attError == .unlikelyError)

        // The answer comes after the fallback answered: refused, told, counted; nothing changes.
        handler.answer(number)
        let complaint = try await handler.next()
        #expect(complaint["ok"] == .bool(false) && complaint["error"]?.string?.contains("not waiting") == true)
        #expect(outcomes(rig) == ["late", "refused"])
        let numbers = try await counters(client)
        #expect(numbers["handlerFallbacks"] == 1 && numbers["handlerRefused"] == 1 && numbers["handlerAnswered"] == 0)
        #expect(numbers["requests"] == 1 && numbers["answered"] == 1, "\(numbers)")
        handler.close()
    }

    @Test func aFaultsDelayComesOutOfTheHandlersDeadline() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let handler = try HandlerConnection(
            path: server.path, claim: ["id": .string(controlPoint), "fallback": "0x80"])
        _ = try await handler.next()
        let armed = try await offPool {
            try client.send([
                "command": "fault", "operation": "write", "id": .string(controlPoint), "delayMs": 3000,
            ])
        }
        #expect(armed.contains(#""ok":true"#), "\(armed)")
        let central = VirtualCentral(connectingTo: rig.backend)
        let write = Task { try await central.write([0x01], to: controlPoint) }
        // The fault holds the request 3 s on the rig's clock; the handler then has what is left of 3.6 s from the
        // request's arrival, 0.6 s, not 3.6 s more: past that the engine's 4.5 s would answer instead.
        _ = await rig.recorder.next {
            if case .fault(let text, _) = $0 { text.hasPrefix("delay") } else { false }
        }
        rig.clock.advance(by: .milliseconds(3000))
        _ = try await handler.nextRequest("write", on: controlPoint)
        rig.clock.advance(by: .milliseconds(600))
        #expect(await write.result.attError == ATTError(rawValue: 0x80))
        #expect(outcomes(rig) == ["late"])
        let numbers = try await counters(client)
        #expect(numbers["requests"] == 1 && numbers["answered"] == 1 && numbers["expired"] == 0, "\(numbers)")
        handler.close()
    }

    @Test func handlerThatDiesLeavesItsRequestsToTheProfile() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let handler = try HandlerConnection(path: server.path, claim: ["id": .string(controlPoint)])
        _ = try await handler.next()
        let central = VirtualCentral(connectingTo: rig.backend)

        // Waiting on the handler when it goes: the profile answers at once, no clock moved.
        let write = Task { try await central.write([0x02], to: controlPoint) }
        _ = try await handler.nextRequest("write", on: controlPoint)
        handler.close()
        #expect(await write.result.attError == ATTError(rawValue: 0x80))
        // And later requests never wait on it: its claim went with it.
        try await central.write([0x01], to: controlPoint)
        #expect(outcomes(rig) == ["gone"])
        let numbers = try await counters(client)
        #expect(numbers["handlerRequests"] == 1 && numbers["handlerFallbacks"] == 1)
        #expect(numbers["requests"] == 2 && numbers["answered"] == 2, "\(numbers)")

        // The characteristic is free again for a new handler.
        let again = try HandlerConnection(path: server.path, claim: ["id": .string(controlPoint)])
        #expect(try await again.next()["ok"] == .bool(true))
        again.close()
    }

    @Test func garbageFloodsAndSecondAnswersAreRefusedOneAnswerStays() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let handler = try HandlerConnection(path: server.path, claim: ["id": .string(controlPoint)])
        _ = try await handler.next()
        let central = VirtualCentral(connectingTo: rig.backend)

        // Lines that answer nothing: each told, counted, and no request is touched.
        handler.send("not json")
        #expect(try await handler.next()["error"]?.string?.contains("not an answer") == true)
        for number in 1000..<1200 { handler.answer(number) }
        for _ in 1000..<1200 { #expect(try await handler.next()["ok"] == .bool(false)) }

        // An answer that names its request but cannot be read: the fallback answers it (the profile: 01 is allowed).
        let garbled = Task { try await central.write([0x01], to: controlPoint) }
        let (first, _) = try await handler.nextRequest("write", on: controlPoint)
        handler.answer(first, ["error": "no-such-error"])
        #expect(await garbled.result.attError == nil)
        #expect(try await handler.next()["error"]?.string?.contains("got the fallback") == true)

        // A value longer than the characteristic's max-length (1) is no answer either.
        let tooLong = Task { try await central.write([0x01], to: controlPoint) }
        let (long, _) = try await handler.nextRequest("write", on: controlPoint)
        handler.answer(long, ["hex": "0102"])
        #expect(await tooLong.result.attError == nil)
        #expect(try await handler.next()["error"]?.string?.contains("past the characteristic's 1") == true)

        // Two answers: the first decides, the second is refused.
        let twice = Task { try await central.write([0x01], to: controlPoint) }
        let (second, _) = try await handler.nextRequest("write", on: controlPoint)
        handler.answer(second, ["error": "0x82"])
        handler.answer(second)
        #expect(await twice.result.attError == ATTError(rawValue: 0x82))
        #expect(try await handler.next()["error"]?.string?.contains("not waiting") == true)

        #expect(outcomes(rig).filter { $0 != "refused" } == ["garbled", "garbled", "error 0x82 Application Error"])
        let numbers = try await counters(client)
        #expect(numbers["handlerRefused"] == 202 && numbers["handlerFallbacks"] == 2 && numbers["handlerAnswered"] == 1)
        #expect(numbers["requests"] == 3 && numbers["answered"] == 3, "\(numbers)")
        handler.close()
    }

    @Test func shutdownAnswersWhatHandlersHold() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let handler = try HandlerConnection(
            path: server.path, claim: ["id": .string("body-sensor-location"), "fallback": "0x80"])
        _ = try await handler.next()
        let central = VirtualCentral(connectingTo: rig.backend)
        let read = Task { try await central.read("body-sensor-location") }
        _ = try await handler.nextRequest("read", on: "body-sensor-location")
        rig.emulator.releaseHeldRequests()
        #expect(await read.result.attError == ATTError(rawValue: 0x80))
        #expect(outcomes(rig) == ["gone"])
        let numbers = try await counters(client)
        #expect(numbers["requests"] == 1 && numbers["answered"] == 1, "\(numbers)")
        handler.close()
    }

    @Test(
        arguments: [
            (["id": "nope"], "no characteristic `nope`"),
            ([:], "needs `id` or `ids`"),
            (["id": "body-sensor-location", "deadlineMs": 5000], "`deadlineMs` must be from 1 to 3600"),
            (["id": "body-sensor-location", "operations": ["notify"]], "`operations` must list read, write"),
            (["id": "body-sensor-location", "fallback": "sometimes"], "`fallback` must be `profile` or an ATT error"),
        ] as [([String: JSONValue], String)])
    func claimsThatCannotHoldAreRefused(claim: [String: JSONValue], message: String) async throws {
        let (_, server, _) = try await controlledHeartRate()
        defer { server.stop() }
        let handler = try HandlerConnection(path: server.path, claim: claim)
        let refusal = try await handler.next()
        #expect(refusal["ok"] == .bool(false) && refusal["error"]?.string?.contains(message) == true, "\(refusal)")
        handler.close()
    }

    @Test func oneHandlerPerCharacteristicAndOperation() async throws {
        let (_, server, _) = try await controlledHeartRate()
        defer { server.stop() }
        let reads = try HandlerConnection(
            path: server.path, claim: ["id": "body-sensor-location", "operations": ["read"]])
        #expect(try await reads.next()["ok"] == .bool(true))
        let again = try HandlerConnection(path: server.path, claim: ["id": "body-sensor-location"])
        #expect(try await again.next()["error"]?.string?.contains("another handler answers") == true)
        // Writes of the same characteristic are another claim.
        let writes = try HandlerConnection(
            path: server.path, claim: ["id": "body-sensor-location", "operations": ["write"]])
        #expect(try await writes.next()["ok"] == .bool(true))
        for connection in [reads, again, writes] { connection.close() }
    }
}

extension Result {
    /// The ATT error it failed with, or nil on success.
    fileprivate var attError: ATTError? {
        if case .failure(let error) = self { error as? ATTError } else { nil }
    }
}
