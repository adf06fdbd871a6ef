import Foundation
import GATTModel
import GATTProfile
import Testing

/// Decodes text that must be valid, failing the test with the diagnostics when it is not.
func decodeValid(_ text: String) throws -> PeripheralProfile {
    let result = ProfileLoader.decode(text: text, fileName: "test.yaml")
    #expect(!result.hasErrors, "\(result.renderedDiagnostics)")
    return try #require(result.profile)
}

/// Decodes text and returns the diagnostics rendered without the file name.
func diagnostics(_ text: String) -> [String] {
    ProfileLoader.decode(text: text, fileName: "test.yaml").diagnostics.map(\.positionedMessage)
}

@Suite struct DecodingTests {
    @Test func heartRateMeasurementFieldsEncodeToFlagsThenBPM() throws {
        let result = ProfileLoader.load(path: Repository.root.appendingPathComponent("profiles/heart-rate.yaml").path)
        let profile = try #require(result.profile)
        let measurement = try #require(profile.characteristic(id: "heart-rate-measurement"))
        #expect(measurement.uuid == BluetoothUUID(0x2A37))
        #expect(measurement.value == .dynamic([0x06, 72]))
        #expect(measurement.layout?.fields.map(\.name) == ["flags", "bpm"])
        #expect(measurement.properties == [.notify])
        #expect(profile.advertisement.serviceUUIDs == [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
        #expect(profile.advertisement.appearance == 0x0341)
    }

    @Test func sigKeysAndHexSpellingsNameTheSameUUIDs() throws {
        let profile = try decodeValid(
            """
            name: X
            services:
              - id: a
                uuid: heart-rate
                characteristics:
                  - { id: m, uuid: 0x2A37, properties: [notify] }
              - id: b
                uuid: 0000180f-0000-1000-8000-00805f9b34fb
                characteristics:
                  - { id: c, uuid: E71EE188-279F-4ED6-8055-12D77BFD900C, properties: [read] }
            """)
        #expect(profile.services.map(\.uuid) == [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
        #expect(profile.characteristics[0].uuid == BluetoothUUID(0x2A37))
        #expect(profile.characteristics[1].uuid == BluetoothUUID("E71EE188-279F-4ED6-8055-12D77BFD900C"))
    }
}
