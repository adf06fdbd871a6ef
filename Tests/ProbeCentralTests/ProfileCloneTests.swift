import Foundation
import GATTModel
import GATTProfile
import Testing

@testable import ProbeCentral

/// `blemu clone`'s writer: a probe report in, a profile that validates out, holding what the central saw.
struct ProfileCloneTests {
    static let source = ProfileClone.Source(adapter: "hci1", date: "2026-11-26T05:30:00Z", bluez: "5.82")
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func characteristic(
        _ uuid: String, _ flags: [String], read: ProbeRead? = nil, descriptors: [ProbeDescriptor] = []
    ) -> ProbeCharacteristic {
        ProbeCharacteristic(
            uuid: uuid, name: nil, flags: flags, path: "/c/\(uuid)", read: read, notifications: [],
            descriptors: descriptors)
    }

    static func value(_ bytes: [UInt8]) -> ProbeRead { .value(ProbeValue(bytes: bytes, uuid: "")) }

    static func descriptor(_ uuid: String, _ bytes: [UInt8]) -> ProbeDescriptor {
        ProbeDescriptor(uuid: uuid, name: nil, path: "/d/\(uuid)", read: value(bytes))
    }

    static func report(
        name: String?, uuids: [String], services: [ProbeService], device: ProbeDevice? = nil
    )
        -> ProbeReport
    {
        ProbeReport(
            adapter: "hci1",
            device: device
                ?? ProbeDevice(
                    path: "/org/bluez/hci1/dev_00_AA_01_00_00_00", address: "00:AA:01:00:00:00",
                    addressType: "public", name: name, rssi: nil, uuids: uuids),
            services: services, listenSeconds: 0, timings: ProbeTimings(found: 0, connected: 0, resolved: 0, total: 0))
    }

    /// The clone's text, loaded as a profile: it must have no error.
    static func load(_ text: String) throws -> PeripheralProfile {
        let result = ProfileLoader.decode(text: text, fileName: "clone.yaml")
        let errors = result.diagnostics.filter { $0.severity == .error }
        try #require(errors.isEmpty, "\(errors.map(\.positionedMessage))\n\(text)")
        return try #require(result.profile)
    }

    @Test func aHeartRateStrapBecomesAProfileWithItsAdvertisementTreeAndValues() throws {
        let device = ProbeDevice(
            path: "/org/bluez/hci1/dev_00_AA_01_00_00_00", address: "00:AA:01:00:00:00", addressType: "public",
            name: "Polar H10", rssi: -40, uuids: ["180D", "180F", "FEE0"], manufacturerData: ["006B": "0200"],
            appearance: 0x0341, txPower: 4)
        let report = Self.report(
            name: nil, uuids: [],
            services: [
                ProbeService(
                    uuid: "1800", name: "Generic Access", isPrimary: true, path: "/s/1800",
                    characteristics: [Self.characteristic("2A00", ["read"], read: Self.value(Array("Polar".utf8)))]),
                ProbeService(
                    uuid: "180D", name: nil, isPrimary: true, path: "/s/180D",
                    characteristics: [
                        Self.characteristic("2A37", ["notify"], descriptors: [Self.descriptor("2902", [0, 0])]),
                        Self.characteristic("2A38", ["read"], read: Self.value([0x01])),
                        Self.characteristic(
                            "2A39", ["write"], descriptors: [Self.descriptor("2901", Array("Reset \"EE\"".utf8))]),
                    ]),
                ProbeService(
                    uuid: "180F", name: nil, isPrimary: true, path: "/s/180F",
                    characteristics: [
                        Self.characteristic(
                            "2A19", ["read", "notify"], read: Self.value([0x50]),
                            descriptors: [Self.descriptor("2904", [0x04, 0x00, 0xAD, 0x27, 0x01, 0x06, 0x01])])
                    ]),
                ProbeService(
                    uuid: "8D3A0001-6B1E-4C2F-9A57-3E2C1D0B4F61", name: nil, isPrimary: true, path: "/s/x",
                    characteristics: [
                        Self.characteristic(
                            "8D3A0002-6B1E-4C2F-9A57-3E2C1D0B4F61", ["read"],
                            read: .failure(
                                ProbeFailure(
                                    name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0f"))),
                        Self.characteristic(
                            "8D3A0003-6B1E-4C2F-9A57-3E2C1D0B4F61",
                            ["read", "write", "extended-properties", "reliable-write"],
                            read: Self.value([1, 2])),
                    ]),
            ], device: device)
        let text = ProfileClone.yaml(from: report, source: Self.source)
        let profile = try Self.load(text)

        #expect(
            text.hasPrefix(
                "# Cloned by `blemu clone` from 00:AA:01:00:00:00 (Polar H10), through bluetoothd 5.82 on hci1, "
                    + "2026-11-26T05:30:00Z."))
        #expect(profile.name == "Polar")  // the GAP Device Name read from 0x2A00, not the advertised name
        #expect(text.contains("# skipped: service 1800: GAP (0x1800) is bluetoothd's own"))
        #expect(profile.services.map(\.id) == ["heart-rate", "battery", "service-4"])
        #expect(profile.advertisement.localName == "Polar H10")
        #expect(profile.advertisement.serviceUUIDs == [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
        #expect(text.contains("# not advertised here: FEE0"))
        #expect(profile.advertisement.manufacturerData == [ManufacturerData(companyID: 0x006B, data: [0x02, 0x00])])
        #expect(profile.advertisement.appearance == 0x0341 && profile.advertisement.includesTxPower)

        let characteristics = profile.services.flatMap(\.characteristics)
        let byID = Dictionary(uniqueKeysWithValues: characteristics.map { ($0.id, $0) })
        #expect(byID["heart-rate-measurement"]?.properties == [.notify])
        #expect(byID["heart-rate-measurement"]?.descriptors.isEmpty == true)  // the CCCD is bluetoothd's
        #expect(byID["body-sensor-location"]?.value.bytes == [0x01])
        #expect(byID["body-sensor-location"]?.value.isCached == true)  // read-only: a constant `value`
        #expect(byID["heart-rate-control-point"]?.descriptors == [.userDescription("Reset \"EE\"")])
        #expect(byID["battery-level"]?.value.bytes == [0x50] && byID["battery-level"]?.value.isCached == false)
        // A SIG layout blemu knows: typed fields, as the bundled battery profile writes them.
        #expect(byID["battery-level"]?.layout?.fields == [FieldSpec(name: "percent", type: .unsigned(bytes: 1))])
        #expect(text.contains("- { name: percent, type: u8, value: 80 }"))
        #expect(
            byID["battery-level"]?.descriptors
                == [
                    .presentationFormat(
                        PresentationFormat(format: 4, exponent: 0, unit: 0x27AD, namespace: 1, description: 0x0106))
                ])
        // Refused with Insufficient Encryption: no value, and the encryption that explains it.
        let secret = try #require(byID["characteristic-4-1"])
        #expect(secret.security[.read] == .encrypted)
        #expect(text.contains("# no value: the read was refused (ATT 0x0F)"))
        #expect(byID["characteristic-4-2"]?.properties == [.read, .write, .reliableWrite])
    }

    @Test func aNameWithQuotesBackslashesControlsAndAccentsComesBackAsItWas() throws {
        let name = "Café \"Ü\" \\ a/b\tend"
        let report = Self.report(
            name: name, uuids: [],
            services: [
                ProbeService(
                    uuid: "180F", name: nil, isPrimary: true, path: "/s",
                    characteristics: [Self.characteristic("2A19", ["read"], read: Self.value([1]))])
            ])
        let profile = try Self.load(ProfileClone.yaml(from: report, source: Self.source))
        #expect(profile.name == name)
        #expect(profile.advertisement.localName == name)
    }

    @Test func aRecordedStreamBecomesACSVAndAScheduleThatReplaysItAtItsOwnTimes() throws {
        var measurement = Self.characteristic("2A37", ["notify"])
        measurement.notifications = [
            (0.10, [0x06, 0x48]), (1.10, [0x06, 0x4A]), (2.12, [0x06, 0x47]), (3.10, [0x06, 0x49]),
        ]
        .map { ProbeValue(bytes: $1, uuid: "2A37", at: $0) }
        let report = Self.report(
            name: "Strap", uuids: [],
            services: [
                ProbeService(uuid: "180D", name: nil, isPrimary: true, path: "/s", characteristics: [measurement])
            ])
        let clone = ProfileClone.clone(from: report, source: Self.source, recordingStem: "strap")
        let profile = try Self.load(clone.yaml)
        let schedule = try #require(profile.behaviour.schedules.first)
        #expect(schedule.characteristicID == "heart-rate-measurement" && schedule.action == .notify)
        #expect(schedule.start == .firstSubscription)
        #expect(schedule.isRecordedPace)
        // Notify-only, so never read: the first recorded value is its value until the replay starts, typed.
        let characteristic = try #require(profile.characteristic(id: "heart-rate-measurement"))
        #expect(
            characteristic.value.bytes == [0x06, 0x48] && characteristic.layout?.fields.map(\.name) == ["flags", "bpm"])
        let replay = Replay(file: "strap.heart-rate-measurement.csv", format: .hex, repeats: true)
        #expect(schedule.generators == [FieldGenerator(field: nil, generator: .replay(replay))])
        #expect(clone.yaml.contains("# recorded: 4 values in 3.0 s; sent at the times they arrived"))
        #expect(
            clone.recordings
                == ["strap.heart-rate-measurement.csv": "time,value\n0.100,0648\n1.100,064A\n2.120,0647\n3.100,0649\n"])
    }

    /// Typed fields only where the bytes decode with the SIG layout and encode back to themselves.
    @Test func sigValuesBecomeTypedFieldsOnlyWhenTheyEncodeBackToTheSameBytes() throws {
        let cases: [(uuid: UInt16, bytes: [UInt8], fields: [String]?)] = [
            (0x2A37, [0x06, 0x48], ["flags", "bpm"]),
            (0x2A37, [0x19, 0x40, 0x01, 0x10, 0x00, 0x20, 0x03], ["flags", "bpm", "energy-expended", "rr-intervals"]),
            (0x2A37, [0x06], nil),  // the flags promise a bpm the value lacks
            (0x2A37, [0x86, 0x48], nil),  // a reserved bit: its name is unknown, so it cannot be spelled
            (0x2A1C, [0x04, 0x6E, 0x01, 0x00, 0xFF, 0x02], ["flags", "celsius", "type"]),
            (0x2A1C, [0x02, 0x6E, 0x01, 0x00, 0xFF] + [UInt8](repeating: 0, count: 7), nil),  // a time stamp
            (
                0x2A5B, [0x03, 0x28, 0x32, 0, 0, 0x00, 0x7C, 0x3A, 0x11, 0x00, 0x78],
                [
                    "flags", "wheel-revolutions", "last-wheel-event-time", "crank-revolutions", "last-crank-event-time",
                ]
            ),
            (0x2A19, [0x50, 0x00], nil),
            (0x2A6E, [0x3A, 0x09], ["celsius-hundredths"]),
            (0x2A00, Array("Name".utf8), nil),
        ]
        for (uuid, bytes, fields) in cases {
            #expect(ProfileClone.sigLayout(uuid: uuid, bytes: bytes)?.fields.map(\.name) == fields, "\(uuid) \(bytes)")
        }
        // Spelled in the profile, they load and encode to the bytes that were read.
        for (uuid, bytes, fields) in cases where fields != nil {
            let characteristic = Self.characteristic(
                String(format: "%04X", uuid), ["read", "notify"], read: Self.value(bytes))
            let report = Self.report(
                name: "T", uuids: [],
                services: [
                    ProbeService(
                        uuid: "FFF0", name: nil, isPrimary: true, path: "/s", characteristics: [characteristic])
                ])
            let profile = try Self.load(ProfileClone.yaml(from: report, source: Self.source))
            let loaded = try #require(profile.services.first?.characteristics.first)
            #expect(loaded.layout?.fields.map(\.name) == fields && loaded.value.bytes == bytes, "\(uuid)")
        }
    }

    /// `max-length` where the value's length says so: a writable value of a fixed-size SIG layout.
    @Test func aWritableFixedSizeSIGValueGetsItsLengthAsMaxLength() throws {
        let report = Self.report(
            name: "T", uuids: [],
            services: [
                ProbeService(
                    uuid: "1809", name: nil, isPrimary: true, path: "/s",
                    characteristics: [
                        Self.characteristic("2A21", ["read", "write", "indicate"], read: Self.value([0x05, 0x00])),
                        Self.characteristic("2A19", ["read", "notify"], read: Self.value([0x50])),
                        Self.characteristic("FFF1", ["read", "write"], read: Self.value([0x01, 0x02])),
                    ])
            ])
        let profile = try Self.load(ProfileClone.yaml(from: report, source: Self.source))
        let lengths = profile.services.flatMap(\.characteristics).map(\.maximumLength)
        #expect(lengths == [2, Characteristic.maximumValueLength, Characteristic.maximumValueLength])
    }

    @Test func aDeviceWithOnlyBluetoothdsOwnServicesIsAnEmptyProfileThatStillValidates() throws {
        let report = Self.report(
            name: "Beacon", uuids: [],
            services: [
                ProbeService(uuid: "1801", name: nil, isPrimary: true, path: "/s", characteristics: [])
            ])
        let text = ProfileClone.yaml(from: report, source: Self.source)
        #expect(try Self.load(text).services.isEmpty)
        #expect(text.contains("services: []\n  # skipped: service 1801"))
    }

    @Test func everyBundledProfileAsACentralSeesItClonesToTheSameTree() throws {
        let directory = Self.root.appendingPathComponent("profiles")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
        try #require(files.count >= 5)
        for file in files.sorted() {
            let original = try #require(ProfileLoader.load(path: directory.appendingPathComponent(file).path).profile)
            let text = ProfileClone.yaml(from: Self.seen(original), source: Self.source)
            let clone = try Self.load(text)
            #expect(clone.services.map(\.uuid) == original.services.map(\.uuid), "\(file)")
            for (theirs, ours) in zip(
                original.services.flatMap(\.characteristics), clone.services.flatMap(\.characteristics))
            {
                #expect(ours.uuid == theirs.uuid, "\(file)")
                #expect(ours.properties == Self.visible(theirs.properties), "\(file) \(theirs.id)")
                if theirs.properties.contains(.read), theirs.security[.read] == SecurityLevel.none {
                    #expect(ours.value.bytes == theirs.value.bytes, "\(file) \(theirs.id)")
                }
                #expect(ours.descriptors == theirs.descriptors, "\(file) \(theirs.id)")
            }
            #expect(clone.advertisement.serviceUUIDs == original.advertisement.serviceUUIDs, "\(file)")
            if file == "device-information.yaml" {
                // SIG string characteristics are written as text.
                #expect(text.contains("value: { text: \""), "\(text)")
            }
        }
    }

    /// The properties a central learns: the declaration's, without the encryption-required variants (bluetoothd's
    /// client reports `notify` for both).
    static func visible(_ properties: CharacteristicProperties) -> CharacteristicProperties {
        var visible = properties.subtracting([
            .notifyEncryptionRequired, .indicateEncryptionRequired, .extendedProperties,
        ])
        if properties.contains(.notifyEncryptionRequired) { visible.insert(.notify) }
        if properties.contains(.indicateEncryptionRequired) { visible.insert(.indicate) }
        return visible
    }

    /// A probe report of `profile` as an unpaired central would see it: every readable value, every refusal.
    static func seen(_ profile: PeripheralProfile) -> ProbeReport {
        let services = profile.services.map { service in
            ProbeService(
                uuid: service.uuid.description, name: nil, isPrimary: service.isPrimary, path: "/s/\(service.id)",
                characteristics: service.characteristics.map { c in
                    let read: ProbeRead? =
                        !c.properties.contains(.read)
                        ? nil
                        : c.security[.read] == SecurityLevel.none
                            ? value(c.value.bytes)
                            : .failure(
                                ProbeFailure(
                                    name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0f"))
                    return characteristic(
                        c.uuid.description, visible(c.properties).names, read: read,
                        descriptors: c.descriptors.map { descriptor(String(describing: $0.uuid), $0.value) })
                })
        }
        return report(
            name: profile.advertisement.localName ?? profile.name,
            uuids: profile.advertisement.serviceUUIDs.map(\.description), services: services)
    }
}
