import ControlProtocol
import Emulation
import Foundation
import Testing

/// The control socket's `describe`: the profile served, the same document `blemu show --json` prints, so a tool
/// beside a running device learns its characteristics with nothing but the socket.
@Suite struct DescribeTests {
    @Test func describeAnswersWithTheProfileAndItsBehaviourAsShowJSONHasThem() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        // A value set through the socket changes `get`, not the profile `describe` describes.
        _ = try await offPool { try client.send(["command": "set", "id": "battery-level", "hex": "32"]) }
        let answer = object(try await offPool { try client.send(["command": "describe"]) })
        #expect(answer["ok"] as? Bool == true, "\(answer)")
        let profile = try #require(answer["profile"] as? [String: Any])
        #expect(profile["name"] as? String == rig.emulator.profile.name)
        let services = profile["services"] as? [[String: Any]] ?? []
        #expect(services.compactMap { $0["id"] as? String } == rig.emulator.profile.services.map(\.id))
        let characteristics = Dictionary(
            uniqueKeysWithValues: services.flatMap { $0["characteristics"] as? [[String: Any]] ?? [] }.compactMap {
                characteristic in (characteristic["id"] as? String).map { ($0, characteristic) }
            })
        let battery = try #require(characteristics["battery-level"])
        #expect(battery["value"] as? String == "57", "the profile's starting value")
        #expect(battery["properties"] as? [String] == ["read", "notify"])
        let fields = battery["fields"] as? [[String: Any]] ?? []
        #expect(fields.first?["name"] as? String == "percent" && fields.first?["type"] as? String == "u8")
        // The behaviour in the words `blemu show` prints, one sentence a line, a generator under its schedule.
        let behaviour = profile["behaviour"] as? [String] ?? []
        #expect(behaviour.contains { $0.hasPrefix("schedule heart-rate-measurement: notify every 1s") }, "\(behaviour)")
        #expect(behaviour.contains { $0.hasPrefix("  bpm: ") }, "\(behaviour)")
        // The same document `blemu show --json` prints.
        let shown = try JSONSerialization.jsonObject(with: Data(ProfileJSON.document(rig.emulator.profile).text.utf8))
        #expect(NSDictionary(dictionary: profile).isEqual(to: shown as? [String: Any] ?? [:]))
    }

    /// The keys a client reads (the Python package, the live view), each where it was when Foundation's encoder
    /// wrote the document, and a key without a value left out rather than null.
    @Test func theDocumentKeepsItsKeysAndLeavesOutWhatHasNoValue() throws {
        let document = ProfileJSON.document(Fixtures.heartRate())
        #expect(Set(document.object?.keys.map { $0 } ?? []) == ["name", "pairing", "services", "behaviour"])
        #expect(document["pairing"]?.object?.keys.sorted() == ["bondable", "ioCapability"], "no passkey: no key")
        let service = try #require(document["services"]?.array?.first)
        #expect(
            service.object?.keys.sorted() == ["characteristics", "id", "includes", "name", "primary", "uuid"])
        let characteristics = service["characteristics"]?.array ?? []
        let measurement = try #require(characteristics.first { $0["id"] == .string("heart-rate-measurement") })
        #expect(
            measurement.object?.keys.sorted() == [
                "bluezFlags", "cached", "descriptors", "fields", "id", "maxLength", "name", "permissions",
                "properties", "security", "uuid", "value",
            ])
        #expect(measurement["fields"]?.array?.count == 2)
        let controlPoint = try #require(characteristics.first { $0["id"] == .string("heart-rate-control-point") })
        #expect(controlPoint["fields"] == nil, "no layout: no `fields` key, not null")
    }
}
