import BlueZ
import Foundation
import GATTModel
import Peripheral
import Testing

@testable import Emulation

@Suite struct EventLineEncoderTests {
    let time = WallTime(secondsSince1970: 1_714_566_896.789)  // 2024-05-01T12:34:56.789Z

    func object(_ line: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func timestampsAreISO8601InUTCWithMilliseconds() {
        #expect(time.iso8601 == "2024-05-01T12:34:56.789Z")
        #expect(WallTime(secondsSince1970: 0).iso8601 == "1970-01-01T00:00:00.000Z")
        #expect(WallTime(secondsSince1970: 951_782_400.5).iso8601 == "2000-02-29T00:00:00.500Z")
        #expect(WallTime(secondsSince1970: -0.001).iso8601 == "1969-12-31T23:59:59.999Z")
    }

    /// BlueZ 5.83+ says why a link went down; before, the line has no reason rather than a made-up one.
    @Test func aDisconnectCarriesTheStacksReasonOnlyWhenItGaveOne() throws {
        let reason = DisconnectReason(name: "org.bluez.Reason.Timeout", message: "Connection timeout")
        let said = try object(
            EventLineEncoder.encode(EventRecord(time: time, event: .disconnected(central: "c", reason: reason))))
        #expect(said["type"] as? String == "disconnected" && said["central"] as? String == "c")
        #expect(said["reason"] as? String == "Timeout" && said["message"] as? String == "Connection timeout")
        let silent = try object(EventLineEncoder.encode(EventRecord(time: time, event: .disconnected(central: "c"))))
        #expect(silent["reason"] == nil && silent["message"] == nil)
    }

    @Test func rejectedRequestParsesBackWithItsAnswerAndLatency() throws {
        let record = EventRecord(
            time: time,
            event: .request(
                operation: .read, central: "AA:BB:CC:DD:EE:FF", characteristicID: "battery-level", value: [0x57],
                answer: .error(.unlikelyError), latency: .microseconds(1234)))
        let line = EventLineEncoder.encode(record)
        #expect(line.hasPrefix(#"{"time":"2024-05-01T12:34:56.789Z","type":"request""#))
        let json = try object(line)
        #expect(json["operation"] as? String == "read")
        #expect(json["value"] as? String == "57")
        #expect(json["result"] as? String == "error")
        #expect(json["code"] as? Int == 14)
        #expect(json["latencyMs"] as? Double == 1.234)
    }

    /// The log says what the central received (0x0E through bluetoothd) and what the profile asked for.
    @Test func anErrorTheStackCannotCarryIsLoggedAsReceivedWithTheAskedOneBeside() throws {
        let asked = EmulationEvent.Answer.error(ATTError(rawValue: 0xFF))
        let received = BehaviourHandler.asReceived(asked, on: .write, through: .throughBlueZ)
        #expect(received == .error(.unlikelyError, asked: ATTError(rawValue: 0xFF)))
        #expect(BehaviourHandler.asReceived(asked, on: .write, through: .exact) == asked)
        let application = EmulationEvent.Answer.error(ATTError(rawValue: 0x80))
        #expect(BehaviourHandler.asReceived(application, on: .read, through: .throughBlueZ) == application)
        let notPermitted = EmulationEvent.Answer.error(.writeNotPermitted)
        #expect(BehaviourHandler.asReceived(notPermitted, on: .write, through: .throughBlueZ) == notPermitted)
        #expect(
            BehaviourHandler.asReceived(notPermitted, on: .read, through: .throughBlueZ)
                == .error(.unlikelyError, asked: .writeNotPermitted))
        let json = try object(
            EventLineEncoder.encode(
                EventRecord(
                    time: time,
                    event: .request(
                        operation: .write, central: "c", characteristicID: "set-point", value: [0x10],
                        answer: received, latency: .zero))))
        #expect(json["code"] as? Int == 0x0E && json["askedCode"] as? Int == 0xFF)
        #expect(json["asked"] as? String == "0xFF Out Of Range")
    }

    @Test func bytesAreSpelledAsEverywhereInBlemu() throws {
        let value: [UInt8] = [0xBE, 0xEF, 0x0A]
        let line = EventLineEncoder.encode(
            EventRecord(
                time: time, event: .notification(characteristicID: "x", value: value, isIndication: false, centrals: 1))
        )
        #expect(try object(line)["value"] as? String == "BEEF0A")
        #expect(try object(line)["value"] as? String == Hex.string(value, separator: ""))
    }

    @Test func everyEventKindIsOneParseableLineWithAType() throws {
        let events: [EmulationEvent] = [
            .stateChanged("poweredOn"), .connected(central: "c"), .disconnected(central: "c"),
            .request(
                operation: .write, central: "c", characteristicID: "x", value: [], answer: .success, latency: .zero),
            .subscribed(central: "c", characteristicID: "x"), .unsubscribed(central: "c", characteristicID: "x"),
            .notification(characteristicID: "x", value: [0x06, 0x48], isIndication: false, centrals: 2),
            .queueFull(characteristicID: "x"), .queueReady, .fault("reject 0x0E on read #3", characteristicID: "x"),
            .restarted(reason: "bluetoothd \"restarted\"\n"),
        ]
        let text = EventLineEncoder.encode(events.map { EventRecord(time: time, event: $0) })
        let lines = text.split(separator: "\n")
        #expect(lines.count == events.count)
        let types = try lines.map { try object(String($0))["type"] as? String }
        #expect(
            types == [
                "state", "connected", "disconnected", "request", "subscribed", "unsubscribed", "notification",
                "queue-full",
                "queue-ready", "fault", "restart",
            ])
        #expect(try object(String(lines[10]))["reason"] as? String == "bluetoothd \"restarted\"\n")
    }
}
