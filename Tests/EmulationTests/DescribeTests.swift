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
        // The same document as `ProfileJSON` encodes for `blemu show --json`.
        let shown = try JSONSerialization.jsonObject(with: JSONEncoder().encode(ProfileJSON(rig.emulator.profile)))
        #expect(NSDictionary(dictionary: profile).isEqual(to: shown as? [String: Any] ?? [:]))
    }
}
