import ControlProtocol
import Foundation
import GATTModel
import GATTProfile
import Peripheral
import PeripheralTesting
import Testing

@testable import Emulation

/// The protocol engine on the bundled trainer (profiles/indoor-bike.yaml): each FTMS exchange as the spec lists it
/// (FTMS 1.0 4.16), the device's state between requests, and the order of the answers a central sees.
@Suite struct ProtocolsTests {
    /// The actions a write to the control point decides, or its rejection.
    static func answer(_ engine: inout Protocols, _ request: [UInt8]) -> WriteRules.Decision {
        engine.write(request, to: "control-point").decision
    }

    static func indicated(_ bytes: [UInt8]) -> EmulationAction {
        .indicate(characteristicID: "control-point", value: bytes)
    }

    static func status(_ bytes: [UInt8]) -> EmulationAction {
        .notify(characteristicID: "status", value: bytes)
    }

    @Test func controlIsNeededBeforeTargetsAndResetTakesItBack() throws {
        var engine = try Protocols(profile: bundledProfile("indoor-bike"))
        // Set Target Power 200 W before Request Control: Control Not Permitted, and nothing changes.
        #expect(Self.answer(&engine, [0x05, 0xC8, 0x00]) == .accept([Self.indicated([0x80, 0x05, 0x05])]))
        #expect(engine.state["target-power"] == .integer(120))
        #expect(Self.answer(&engine, [0x00]) == .accept([Self.indicated([0x80, 0x00, 0x01])]))
        #expect(engine.state["control"] == .boolean(true))
        #expect(
            Self.answer(&engine, [0x05, 0xC8, 0x00])
                == .accept([Self.indicated([0x80, 0x05, 0x01]), Self.status([0x08, 0xC8, 0x00])]))
        #expect(engine.state["target-power"] == .integer(200))
        #expect(
            Self.answer(&engine, [0x01])
                == .accept([Self.indicated([0x80, 0x01, 0x01]), Self.status([0x01])]))
        #expect(engine.state["control"] == .boolean(false))
        #expect(Self.answer(&engine, [0x05, 0xC8, 0x00]) == .accept([Self.indicated([0x80, 0x05, 0x05])]))
    }

    @Test func parametersAreReadByTheirOpCodeAndCheckedByRange() throws {
        var engine = try Protocols(profile: bundledProfile("indoor-bike"))
        _ = Self.answer(&engine, [0x00])
        // -10 W (0xFFF6 as sint16): outside 0...1000, Invalid Parameter.
        #expect(Self.answer(&engine, [0x05, 0xF6, 0xFF]) == .accept([Self.indicated([0x80, 0x05, 0x03])]))
        // One byte short for Set Target Power: malformed, Invalid Parameter, whatever the state.
        #expect(Self.answer(&engine, [0x05, 0xC8]) == .accept([Self.indicated([0x80, 0x05, 0x03])]))
        #expect(Self.answer(&engine, []) == .accept([Self.indicated([0x80, 0x00, 0x03])]))
        // Stop or Pause carries its mode into the status; a mode the spec does not define is refused.
        #expect(
            Self.answer(&engine, [0x08, 0x02])
                == .accept([Self.indicated([0x80, 0x08, 0x01]), Self.status([0x02, 0x02])]))
        #expect(Self.answer(&engine, [0x08, 0x07]) == .accept([Self.indicated([0x80, 0x08, 0x03])]))
        #expect(
            Self.answer(&engine, [0x07]) == .accept([Self.indicated([0x80, 0x07, 0x01]), Self.status([0x04])]))
        #expect(engine.state["running"] == .boolean(true))
    }

    @Test func anOpCodeTheMachineDoesNotKnowGetsOpCodeNotSupported() throws {
        var engine = try Protocols(profile: bundledProfile("indoor-bike"))
        // Spin Down Control (0x13) and a reserved code: `otherwise`, with the request's own op code.
        #expect(Self.answer(&engine, [0x13, 0x01]) == .accept([Self.indicated([0x80, 0x13, 0x02])]))
        #expect(Self.answer(&engine, [0xFE]) == .accept([Self.indicated([0x80, 0xFE, 0x02])]))
    }

    @Test func withoutOtherwiseAnUnmatchedRequestIsRefusedAndStateKept() throws {
        let request = RequestLayout(
            opCode: FieldSpec(name: "op", type: .unsigned(bytes: 1)), ops: [RequestOp(name: "ping", code: 1)])
        let profile = PeripheralProfile(
            name: "P",
            services: [
                Service(
                    id: "s", uuid: BluetoothUUID(0x1234),
                    characteristics: [
                        Characteristic(id: "cp", uuid: BluetoothUUID(0x1235), properties: [.write, .notify])
                    ])
            ],
            behaviour: Behaviour(
                state: [StateVariable(name: "pings", type: .unsigned(bytes: 1), initial: .integer(0))],
                protocols: [
                    DeviceProtocol(
                        characteristicID: "cp", request: request,
                        cases: [
                            ProtocolCase(
                                conditions: [.op(["ping"])],
                                actions: [
                                    .setState("pings", .literal(.integer(300))),
                                    .send(
                                        characteristicID: "cp", kind: .notify,
                                        pieces: [ValuePiece(type: .unsigned(bytes: 1), source: .state("pings"))]),
                                ])
                        ])
                ]))
        var engine = try Protocols(profile: profile)
        #expect(engine.write([0x02], to: "cp").decision == .reject(DeviceProtocol.defaultRejection))
        #expect(engine.write([0x01, 0x00], to: "cp").decision == .reject(DeviceProtocol.defaultRejection))
        // 300 does not fit a u8: clamped to 255 with a warning, never refused mid-run.
        let outcome = engine.write([0x01], to: "cp")
        #expect(outcome.caseIndex == 0)
        guard case .accept(let actions) = outcome.decision else {
            Issue.record("accepted expected: \(outcome.decision)")
            return
        }
        #expect(actions.contains(.notify(characteristicID: "cp", value: [0xFF])), "\(actions)")
        #expect(actions.contains { if case .warning = $0 { true } else { false } }, "\(actions)")
        engine.reset()
        #expect(engine.state["pings"] == .integer(0))
    }

    @Test func followMovesTowardTheStateAtItsRateAndLandsOnIt() throws {
        var generator = try GeneratorState(.follow(state: "target", ratePerSecond: 50, start: 120))
        #expect(generator.next(at: .seconds(0), state: ["target": .integer(200)]) == .real(120))
        #expect(generator.next(at: .seconds(1), state: ["target": .integer(200)]) == .real(170))
        // 2.5 s later at 50 W/s would pass 200: it lands on the target.
        #expect(generator.next(at: .milliseconds(3500), state: ["target": .integer(200)]) == .real(200))
        #expect(generator.next(at: .seconds(4), state: ["target": .integer(150)]) == .real(175))
    }

    /// The order a central sees: the Write Response first, then the indication, then the status notification, as a
    /// trainer's firmware answers; and `reset` puts the state back.
    @Test func aCentralGetsTheWriteResponseThenTheIndicationThenTheStatus() async throws {
        let rig = try await Rig(bundledProfile("indoor-bike"))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        try central.subscribe(to: "control-point", indications: true)
        _ = await rig.recorder.next {
            if case .subscribed(central.central.id, "control-point") = $0 { true } else { false }
        }
        try await rig.subscribe(central, to: "status")
        var updates = central.notifications.makeAsyncIterator()
        try await central.write([0x00], to: "control-point")
        let granted = await updates.next()
        #expect(granted == .init(characteristicID: "control-point", bytes: [0x80, 0x00, 0x01], isIndication: true))
        try await central.write([0x05, 0xC8, 0x00], to: "control-point")
        let response = await updates.next()
        let status = await updates.next()
        #expect(response?.bytes == [0x80, 0x05, 0x01] && response?.isIndication == true)
        #expect(status == .init(characteristicID: "status", bytes: [0x08, 0xC8, 0x00], isIndication: false))
        #expect(await rig.emulator.protocolState()["target-power"] == .integer(200))
        await rig.emulator.reset()
        #expect(await rig.emulator.protocolState()["target-power"] == .integer(120))
        #expect(await rig.emulator.protocolState()["control"] == .boolean(false))
    }

    /// The control socket's `state`: every variable, set by name and checked against its type, as `blemu ctl` and
    /// the Python client send it.
    @Test func theControlSocketReadsAndSetsStateCheckedAgainstItsTypes() async throws {
        let rig = try await Rig(bundledProfile("indoor-bike"))
        await rig.start()
        let server = ControlServer(path: try temporaryDirectory() + "/control.sock", emulator: rig.emulator)
        try server.start()
        defer { server.stop() }
        let client = ControlClient(path: server.path)
        let initial = try JSONValue(parsing: try await offPool { try client.send(["command": "state"]) })
        #expect(
            initial["state"]
                == .object(["control": .bool(false), "target-power": .integer(120), "running": .bool(false)]))
        let set = try JSONValue(
            parsing: try await offPool {
                try client.send(["command": "state", "set": .object(["target-power": .integer(200)])])
            })
        #expect(set["state"]?["target-power"] == .integer(200), "\(set)")
        #expect(await rig.emulator.protocolState()["target-power"] == .integer(200))
        for (value, reason) in [
            (JSONValue.integer(40_000), "does not fit"), (.string("lots"), "is not a s16"),
        ] {
            let refused = try JSONValue(
                parsing: try await offPool {
                    try client.send(["command": "state", "set": .object(["target-power": value])])
                })
            #expect(refused["ok"] == .bool(false) && refused["error"]?.string?.contains(reason) == true, "\(refused)")
        }
        let unknown = try JSONValue(
            parsing: try await offPool {
                try client.send(["command": "state", "set": .object(["power": .integer(1)])])
            })
        #expect(unknown["error"]?.string?.contains("unknown state variable `power`") == true, "\(unknown)")
        #expect(await rig.emulator.protocolState()["target-power"] == .integer(200), "a refusal changes nothing")
    }

    /// The event log says which case answered a request and what it set, just before the request's own line.
    @Test func theEventLogSaysWhichCaseActedAndWhatItSet() async throws {
        let rig = try await Rig(bundledProfile("indoor-bike"))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        try await central.write([0x00], to: "control-point")
        let granted = await rig.recorder.next { if case .protocolCase = $0 { true } else { false } }
        guard case .protocolCase(let trace)? = granted else {
            Issue.record("no protocol event")
            return
        }
        #expect(trace.request == "request-control" && trace.acted == "case 2: op is request-control")
        #expect(trace.changes == [.init(name: "control", value: .boolean(true))])
        let line = EventLineEncoder.encode(EventRecord(time: .now, event: .protocolCase(trace)))
        let decoded = try JSONValue(parsing: line)
        #expect(decoded["type"] == .string("protocol") && decoded["state"] == .object(["control": .bool(true)]))
        // A refused request records the case that refused it and no change.
        try await central.write([0x13], to: "control-point")
        let unknown = await rig.recorder.next { if case .protocolCase = $0 { true } else { false } }
        guard case .protocolCase(let other)? = unknown else {
            Issue.record("no second protocol event")
            return
        }
        #expect(other.request == "unknown 0x13" && other.acted == "otherwise" && other.changes.isEmpty)
        let records = rig.recorder.records.map(\.event)
        let requestLines = records.filter { if case .request = $0 { true } else { false } }
        let protocolLines = records.filter { if case .protocolCase = $0 { true } else { false } }
        #expect(requestLines.count == 2 && protocolLines.count == 2, "one of each per request: \(records)")
    }

    /// The sensor's SC Control Point (CSCS 1.0 3.4, profiles/cycling-speed-cadence.yaml): each op code's response,
    /// and Set Cumulative Value as a field set, fitted to the measurement's u32.
    @Test func theCyclingControlPointAnswersEachOpCodeAsTheSpecSays() throws {
        var engine = try Protocols(profile: bundledProfile("cycling-speed-cadence"))
        func answer(_ request: [UInt8]) -> WriteRules.Decision {
            engine.write(request, to: "sc-control-point").decision
        }
        func response(_ bytes: [UInt8]) -> EmulationAction {
            .indicate(characteristicID: "sc-control-point", value: [0x10] + bytes)
        }
        #expect(
            answer([0x01, 0xE8, 0x03, 0x00, 0x00])
                == .accept([
                    .setField(characteristicID: "csc-measurement", field: "wheel-revolutions", value: .integer(1000)),
                    response([0x01, 0x01]),
                ]))
        #expect(answer([0x01, 0xE8, 0x03]) == .accept([response([0x01, 0x03])]), "two bytes short: invalid parameter")
        #expect(
            answer([0x03, 0x05])
                == .accept([
                    .setField(characteristicID: "sensor-location", field: "location", value: .integer(5)),
                    response([0x03, 0x01]),
                ]))
        #expect(answer([0x03, 0x0E]) == .accept([response([0x03, 0x03])]), "chest is no place for this sensor")
        #expect(answer([0x04]) == .accept([response([0x04, 0x01, 0x04, 0x05, 0x0B, 0x0C])]))
        #expect(answer([0x02]) == .accept([response([0x02, 0x02])]), "calibration is a running sensor's")
        #expect(answer([]) == .accept([response([0x00, 0x03])]))
    }

    /// What a bike computer sees: Set Cumulative Value answered, the next measurements count on from the value set,
    /// and the new sensor location read back; the event log names the field the case set.
    @Test func aSetCumulativeValueIsWhereTheWheelCountGoesOnFrom() async throws {
        let rig = try await Rig(bundledProfile("cycling-speed-cadence"))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        try central.subscribe(to: "sc-control-point", indications: true)
        _ = await rig.recorder.next {
            if case .subscribed(central.central.id, "sc-control-point") = $0 { true } else { false }
        }
        try await rig.subscribe(central, to: "csc-measurement")
        var updates = central.notifications.makeAsyncIterator()
        rig.clock.advance(by: .seconds(1))
        let before = try #require(await updates.next())
        #expect(before.characteristicID == "csc-measurement" && before.bytes[1...4] == [0x28, 0x32, 0x00, 0x00])
        try await central.write([0x01, 0xE8, 0x03, 0x00, 0x00], to: "sc-control-point")
        let response = try #require(await updates.next())
        #expect(response.bytes == [0x10, 0x01, 0x01] && response.isIndication)
        for expected: UInt32 in [1004, 1008] {
            rig.clock.advance(by: .seconds(1))
            let measurement = try #require(await updates.next())
            #expect(measurement.characteristicID == "csc-measurement")
            #expect(Array(measurement.bytes[1...4]) == withUnsafeBytes(of: expected.littleEndian, Array.init))
        }
        try await central.write([0x03, 0x0C], to: "sc-control-point")
        #expect(try #require(await updates.next()).bytes == [0x10, 0x03, 0x01])
        #expect(try await central.read("sensor-location") == [0x0C])
        let traced = await rig.recorder.next {
            if case .protocolCase(let trace) = $0 { trace.request == "update-sensor-location" } else { false }
        }
        guard case .protocolCase(let trace)? = traced else {
            Issue.record("no protocol event")
            return
        }
        #expect(trace.fields == [.init(name: "sensor-location.location", value: .integer(12))])
        let line = try JSONValue(parsing: EventLineEncoder.encode(EventRecord(time: .now, event: .protocolCase(trace))))
        #expect(line["fields"] == .object(["sensor-location.location": .integer(12)]))
    }

    /// A central writes whatever it likes: any bytes to either bundled control point get a decision, and the same
    /// bytes in the same state get the same one (the engine is a function of its state and the request).
    @Test(arguments: [
        ("indoor-bike", "control-point"), ("glucose-meter", "racp"), ("cycling-speed-cadence", "sc-control-point"),
    ])
    func anyWrittenBytesGetAnAnswerAndNeverATrap(profile: String, characteristic: String) throws {
        var engine = try Protocols(profile: bundledProfile(profile))
        var random = SplitMix64(seed: 0xC0FFEE)
        var accepted = 0
        for _ in 0..<2000 {
            let length = Int(random.next() % 24)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            var twin = engine
            let decision = engine.write(bytes, to: characteristic).decision
            #expect(twin.write(bytes, to: characteristic).decision == decision)
            if case .accept = decision { accepted += 1 }
        }
        // Both devices answer every request with an indication (an `otherwise` each): none is refused.
        #expect(accepted == 2000)
    }
}
