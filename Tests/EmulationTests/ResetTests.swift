import ControlProtocol
import Emulation
import Foundation
import GATTModel
import GATTProfile
import Peripheral
import PeripheralTesting
import Testing

/// The control socket's `reset`: the device as the profile starts it, the centrals' links and subscriptions kept.
@Suite struct ResetTests {
    @Test func resetPutsValuesSchedulesAndFaultsBackAndKeepsTheSubscriptions() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        func send(_ request: [String: JSONValue]) async throws -> [String: Any] {
            object(try await offPool { try client.send(request) })
        }
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "battery-level")
        try await rig.subscribe(central, to: "heart-rate-measurement")
        var battery = central.notifications.makeAsyncIterator()

        // What a test leaves behind: a value set, a schedule held, a fault armed.
        _ = try await send(["command": "set", "id": "battery-level", "fields": ["percent": 50]])
        #expect(await battery.next()?.bytes == [50])
        #expect(try await central.read("battery-level") == [50])
        _ = try await send(["command": "schedules", "action": "pause", "id": "heart-rate-measurement"])
        _ = try await send(["command": "fault", "operation": "read", "id": "body-sensor-location", "error": 0x80])

        let reset = try await send(["command": "reset"])
        #expect(reset["ok"] as? Bool == true, "\(reset)")
        #expect(reset["changed"] as? [String] == ["battery-level"], "\(reset)")
        #expect(try await central.read("battery-level") == [87])
        #expect(try await central.read("body-sensor-location") == [0x01], "the armed fault was dropped")
        // The held first-subscription schedule runs again: its central is still subscribed.
        let schedules = try await send(["command": "schedules"])["schedules"] as? [[String: Any]] ?? []
        let measurement = schedules.first { $0["id"] as? String == "heart-rate-measurement" }
        #expect(measurement?["paused"] as? Bool == false && measurement?["running"] as? Bool == true, "\(schedules)")
        let centrals = try await send(["command": "centrals"])["centrals"] as? [[String: Any]] ?? []
        #expect(
            (centrals.first?["subscriptions"] as? [String]).map(Set.init)
                == ["battery-level", "heart-rate-measurement"], "\(centrals)")

        // No notification for the value put back: the next one the central gets is the next value set.
        _ = try await send(["command": "set", "id": "battery-level", "hex": "28"])
        #expect(await battery.next()?.bytes == [0x28])
        #expect(rig.recorder.records.contains { $0.event == .reset(changed: ["battery-level"]) })
        let counters = try await send(["command": "counters"])["counters"] as? [String: Any]
        #expect(counters?["requests"] as? Int == 3, "the counters keep counting: \(String(describing: counters))")
    }

    @Test func aResetProfileFaultCountsRequestsFromTheReset() async throws {
        var profile = try bundledProfile("heart-rate")
        profile.behaviour.faults = [
            Fault(
                trigger: .request(.read, characteristicID: "body-sensor-location", nth: 2),
                effect: .reject(.unlikelyError))
        ]
        let rig = try await Rig(profile)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        #expect(try await central.read("body-sensor-location") == [0x01])
        #expect(await rig.emulator.reset() == [])
        // Without the reset this read would be the second, and refused.
        #expect(try await central.read("body-sensor-location") == [0x01])
        await #expect(throws: ATTError.unlikelyError) { try await central.read("body-sensor-location") }
    }

    @Test func aResetStateFileForgetsWhatCentralsWrote() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let profile = try bundledProfile("thermostat")
        let store = StateStore(restoreID: "living-room", directory: directory, profile: profile)
        let rig = try await Rig(profile, stateStore: store)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend, security: .encrypted)
        try await central.write([0x02], to: "mode")
        #expect(store.current.values["mode"] == [0x02])
        #expect(await rig.emulator.reset() == ["mode"])
        #expect(store.current.values.isEmpty)
        #expect(StateStore(restoreID: "living-room", directory: directory, profile: profile).restore()?.values == [:])
        #expect(try await central.read("mode") == profile.characteristic(id: "mode")?.value.bytes)
    }
}
