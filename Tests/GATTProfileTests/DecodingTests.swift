import BlueZModel
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

    @Test func temperatureMeasurementCarriesAnIEEE11073Float() throws {
        let result = ProfileLoader.load(
            path: Repository.root.appendingPathComponent("profiles/health-thermometer.yaml").path)
        let profile = try #require(result.profile)
        let measurement = try #require(profile.characteristic(id: "temperature-measurement"))
        // Flags 0x04 (type present), 36.6 as mantissa 366 (0x00016E) with exponent -1 (0xFF), then type 3 (ear).
        #expect(measurement.value == .dynamic([0x04, 0x6E, 0x01, 0x00, 0xFF, 0x03]))
        #expect(measurement.properties == [.indicate])
        #expect(
            measurement.layout?.fields.map(\.type) == [
                .flags(
                    bytes: 1,
                    bits: [
                        FlagBit(name: "fahrenheit", bit: 0), FlagBit(name: "time-stamp-present", bit: 1),
                        FlagBit(name: "temperature-type-present", bit: 2),
                    ]),
                .medfloat, .unsigned(bytes: 1),
            ])
    }

    @Test func aConstantValueIsCachedAndAnInitialValueIsDynamic() throws {
        let profile = try decodeValid(
            """
            name: X
            services:
              - id: s
                uuid: 8D3A0001-6B1E-4C2F-9A57-3E2C1D0B4F61
                characteristics:
                  - { id: model, uuid: model-number-string, properties: [read], value: { text: "H10" } }
                  - { id: label, uuid: 8D3A0002-6B1E-4C2F-9A57-3E2C1D0B4F61, properties: [read, write],
                      initial: { hex: "0x0648" } }
                  - { id: empty, uuid: 8D3A0003-6B1E-4C2F-9A57-3E2C1D0B4F61, properties: [notify] }
            """)
        #expect(profile.characteristic(id: "model")?.value == .cached(Array("H10".utf8)))
        #expect(profile.characteristic(id: "label")?.value == .dynamic([0x06, 0x48]))
        #expect(profile.characteristic(id: "empty")?.value == .dynamic([]))
    }

    @Test func permissionsDefaultToWhatThePropertiesNeed() throws {
        let profile = try decodeValid(
            """
            name: X
            services:
              - id: s
                uuid: 8D3A0001-6B1E-4C2F-9A57-3E2C1D0B4F61
                characteristics:
                  - { id: a, uuid: 2A19, properties: [read, notify] }
                  - { id: b, uuid: 2A39, properties: [write-without-response] }
                  - { id: c, uuid: 2A87, properties: [read], permissions: [read-encryption-required],
                      encryption: { read: authenticated } }
            """)
        #expect(profile.characteristic(id: "a")?.permissions == .readable)
        #expect(profile.characteristic(id: "b")?.permissions == .writeable)
        let c = try #require(profile.characteristic(id: "c"))
        #expect(c.permissions == .readEncryptionRequired)
        #expect(c.security[.read] == .authenticated)
        #expect(c.bluezFlags == [.read, .encryptAuthenticatedRead])
    }

    @Test func theSecureProfileRequiresEncryptionForTheEmailAddress() throws {
        let profile = try #require(
            ProfileLoader.load(path: Repository.root.appendingPathComponent("profiles/secure.yaml").path).profile)
        let email = try #require(profile.characteristic(id: "email-address"))
        #expect(email.bluezFlags == [.read, .notify, .encryptRead, .encryptNotify])
        #expect(profile.pairing == PairingSettings(ioCapability: .keyboardOnly, passkey: 246810, isBondable: true))
    }

    @Test func heartRateBehaviourIsARandomWalkNotifiedEverySecond() throws {
        let profile = try #require(
            ProfileLoader.load(path: Repository.root.appendingPathComponent("profiles/heart-rate.yaml").path).profile)
        #expect(
            profile.behaviour.schedules.first
                == Schedule(
                    characteristicID: "heart-rate-measurement", action: .notify, interval: .seconds(1),
                    start: .firstSubscription,
                    generators: [
                        FieldGenerator(
                            field: "bpm", generator: .randomWalk(start: 72, step: 2, range: 55...110, seed: 10))
                    ]))
        #expect(
            profile.behaviour.writeRules == [
                WriteRule(
                    characteristicID: "heart-rate-control-point",
                    actions: [
                        .validate(.allowedValues([[0x01]]), error: ATTError(rawValue: 0x80)), .store,
                    ])
            ])
    }

    @Test func transferSendsItsTextInChunksEndingWithEOM() throws {
        let profile = try #require(
            ProfileLoader.load(path: Repository.root.appendingPathComponent("profiles/transfer.yaml").path).profile)
        let schedule = try #require(profile.behaviour.schedules.first)
        #expect(schedule.action == .transfer && schedule.interval == .zero)
        guard case .sequence(let values, let repeats) = schedule.generators.first?.generator else {
            Issue.record("expected a sequence generator")
            return
        }
        #expect(!repeats)
        #expect(values.last == .bytes(Array("EOM".utf8)))
        #expect(values.allSatisfy { if case .bytes(let chunk) = $0 { chunk.count <= 20 } else { false } })
        #expect(profile.services.first?.uuid == BluetoothUUID("E71EE188-279F-4ED6-8055-12D77BFD900C"))
    }

    @Test func faultsAndWriteActionsDecodeIntoTheModel() throws {
        let profile = try decodeValid(
            """
            name: X
            services:
              - id: s
                uuid: 8D3A0001-6B1E-4C2F-9A57-3E2C1D0B4F61
                characteristics:
                  - id: cp
                    uuid: 8D3A0002-6B1E-4C2F-9A57-3E2C1D0B4F61
                    properties: [write, indicate]
                  - id: level
                    uuid: battery-level
                    properties: [read, notify]
                    fields: [{ name: percent, type: u8, value: 50 }]
            behaviour:
              write-rules:
                - characteristic: cp
                  actions:
                    - validate: { length: { min: 1, max: 2 }, error: invalid-attribute-value-length }
                    - store
                    - echo
                    - set: { characteristic: level, field: percent }
                    - reply: { characteristic: cp, value: { hex: "10 01 01" } }
              faults:
                - when: { request: write, characteristic: cp, nth: 3 }
                  then: { reject: unlikely-error }
                - when: { after: 250ms }
                  then: stop-advertising
            """)
        #expect(
            profile.behaviour.writeRules.first?.actions == [
                .validate(.length(1...2), error: .invalidAttributeValueLength), .store, .echo,
                .set(characteristicID: "level", field: "percent", ratePerSecond: nil),
                .reply(characteristicID: "cp", value: [0x10, 0x01, 0x01]),
            ])
        #expect(
            profile.behaviour.faults == [
                Fault(trigger: .request(.write, characteristicID: "cp", nth: 3), effect: .reject(.unlikelyError)),
                Fault(trigger: .after(.milliseconds(250)), effect: .stopAdvertising),
            ])
    }

    @Test func aDiagnosticRendersAsFileLineColumnSeverityMessageAndHint() {
        let diagnostic = Diagnostic(
            file: "p.yaml", line: 7, column: 19, severity: .error, message: "unknown property `notifiy`",
            hint: "did you mean `notify`?")
        #expect(diagnostic.description == "p.yaml:7:19: error: unknown property `notifiy`; did you mean `notify`?")
    }

    @Test func everyProblemInAFileIsReportedNotJustTheFirst() {
        let found = diagnostics(
            """
            name: X
            services:
              - id: s
                uuid: heart-rate
                characteristics:
                  - { id: a, uuid: 2A37, properties: [notifiy] }
                  - { id: b, uuid: 2A38, properties: [read], value: { hex: "1" } }
                  - { id: c, uuid: 2A39, properties: [write], max-length: 513 }
            """)
        #expect(
            found == [
                "6:43: error: unknown property `notifiy`; did you mean `notify`?",
                "7:64: error: bad hex `1`: expected pairs of hex digits such as `06 48` or `0x0648`",
                "8:63: error: `max-length` 513 is over 512, the largest attribute value",
            ])
    }

    @Test func aProfileWithErrorsHasNoModel() {
        let result = ProfileLoader.decode(text: "name: X\nservices: []\nbogus: 1\n", fileName: "x.yaml")
        #expect(result.hasErrors)
        #expect(result.profile == nil)
        #expect(
            result.renderedDiagnostics
                == "x.yaml:3:1: error: unknown key `bogus` in the profile; expected one of `name`, `advertisement`, `pairing`, `services`, `behaviour`"
        )
    }

    @Test func aBrokenServiceIsReportedOnceNotAgainAsUnadvertisable() {
        let found = diagnostics(
            """
            name: X
            advertisement:
              service-uuids: [battery]
            services:
              - id: battery
                uuid: battery
                primary: yes
            """)
        #expect(found == ["7:14: error: expected `true` or `false` for `primary`, found `yes`"])
    }
}
