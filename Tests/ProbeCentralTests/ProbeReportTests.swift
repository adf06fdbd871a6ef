import DBus
import Foundation
import Testing

@testable import ProbeCentral

/// The report's two renderings, from a canned heart-rate strap as bluetoothd would describe it.
struct ProbeReportTests {
    static let report = ProbeReport(
        adapter: "hci1",
        device: ProbeDevice(
            path: "/org/bluez/hci1/dev_00_AA_01_00_00_00", address: "00:AA:01:00:00:00", addressType: "public",
            name: "Polar H10 A1B2", rssi: -42, uuids: ["180D", "180F"]),
        services: [
            ProbeService(
                uuid: "180D", name: "Heart Rate", isPrimary: true,
                path: "/org/bluez/hci1/dev_00_AA_01_00_00_00/service000a",
                characteristics: [
                    ProbeCharacteristic(
                        uuid: "2A37", name: "Heart Rate Measurement", flags: ["notify"],
                        path: "/org/bluez/hci1/dev_00_AA_01_00_00_00/service000a/char000b", read: nil,
                        notifications: [ProbeValue(bytes: [0x06, 0x48], uuid: "2A37", at: 0.25)],
                        descriptors: [
                            ProbeDescriptor(
                                uuid: "2902", name: "Client Characteristic Configuration",
                                path: "/org/bluez/hci1/dev_00_AA_01_00_00_00/service000a/char000b/desc000d",
                                read: .value(ProbeValue(bytes: [0x00, 0x00], uuid: "2902")))
                        ]),
                    ProbeCharacteristic(
                        uuid: "2A38", name: "Body Sensor Location", flags: ["read"],
                        path: "/org/bluez/hci1/dev_00_AA_01_00_00_00/service000a/char000e",
                        read: .value(ProbeValue(bytes: [0x01], uuid: "2A38")), notifications: [], descriptors: []),
                    ProbeCharacteristic(
                        uuid: "2A39", name: "Heart Rate Control Point", flags: ["write", "read"],
                        path: "/org/bluez/hci1/dev_00_AA_01_00_00_00/service000a/char0010",
                        read: .failure(
                            ProbeFailure(name: "org.bluez.Error.NotPermitted", message: "Read not permitted")),
                        notifications: [], descriptors: []),
                ])
        ],
        listenSeconds: 3, timings: ProbeTimings(found: 1.2, connected: 2.5, resolved: 3.1, total: 6.4))

    @Test func theTextShowsTheDeviceTreeValuesErrorsAndNotifications() {
        let text = Self.report.text
        #expect(text.hasPrefix("00:AA:01:00:00:00 (public) \"Polar H10 A1B2\", RSSI -42 dBm, via hci1\n"))
        #expect(text.contains("  advertised: 180D, 180F\n"))
        #expect(text.contains("service 180D Heart Rate\n"))
        #expect(text.contains("  2A37 Heart Rate Measurement [notify]\n    1 notification(s) in 3.0 s\n"))
        #expect(text.contains("      +0.25 s 72 bpm, contact detected  (0648)\n"))
        #expect(text.contains("    2902 Client Characteristic Configuration: 0000\n"))
        #expect(text.contains("    read: Chest  (01)\n"))
        #expect(text.contains("    read: error org.bluez.Error.NotPermitted: Read not permitted [ATT 0x02]\n"))
        #expect(text.hasSuffix("found after 1.2 s, connected 2.5 s, resolved 3.1 s, done 6.4 s\n"))
    }

    @Test func theJSONHasTheDocumentedShapeAndRoundTrips() throws {
        let json = Self.report.json
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["adapter", "device", "services", "listenSeconds", "timings"])
        let device = try #require(object["device"] as? [String: Any])
        #expect(device["uuids"] as? [String] == ["180D", "180F"])
        #expect(device["rssi"] as? Int == -42)
        let service = try #require((object["services"] as? [[String: Any]])?.first)
        #expect(service["primary"] as? Bool == true)
        let characteristics = try #require(service["characteristics"] as? [[String: Any]])
        let location = try #require(characteristics.first { $0["uuid"] as? String == "2A38" })
        #expect(
            (location["read"] as? [String: Any])?["value"] as? [String: String] == ["hex": "01", "decoded": "Chest"])
        let control = try #require(characteristics.first { $0["uuid"] as? String == "2A39" })
        let error = try #require((control["read"] as? [String: Any])?["error"] as? [String: Any])
        #expect(error["attError"] as? Int == 2)
        #expect(try JSONDecoder().decode(ProbeReport.self, from: Data(json.utf8)) == Self.report)
    }

    @Test func aLostLinkIsInTheTextAndTheJSONAndNowhereWhenTheLinkHeld() throws {
        var report = Self.report
        report.linkLoss = ProbeLinkLoss(phase: .reading, readsDone: 3, readsSkipped: 4)
        #expect(
            report.text.contains(
                "the link dropped while reading, after 3 reads (4 not tried): this report is incomplete\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let linkLoss = try #require(object["linkLoss"] as? [String: Any])
        #expect(linkLoss["phase"] as? String == "reading")
        #expect(linkLoss["readsDone"] as? Int == 3 && linkLoss["readsSkipped"] as? Int == 4)
        #expect(!Self.report.text.contains("link dropped"))
    }

    @Test func notFoundSaysWhatTheAdapterSawStrongestFirst() {
        func device(_ address: String, adapter: String, name: String?, rssi: Int16?) -> [String: [String: DBusValue]] {
            var properties: [String: DBusValue] = [
                "Address": .string(address), "Adapter": .objectPath(ObjectPath(stringLiteral: adapter)),
            ]
            if let name { properties["Name"] = .string(name) }
            if let rssi { properties["RSSI"] = .int16(rssi) }
            return ["org.bluez.Device1": properties]
        }
        let objects: ManagedObjects = [
            "/org/bluez/hci1/dev_1": device("00:AA:01:00:00:01", adapter: "/org/bluez/hci1", name: nil, rssi: -80),
            "/org/bluez/hci1/dev_2": device("00:AA:01:00:00:02", adapter: "/org/bluez/hci1", name: "Strap", rssi: -40),
            "/org/bluez/hci1/dev_3": device("00:AA:01:00:00:03", adapter: "/org/bluez/hci1", name: "Old", rssi: nil),
            "/org/bluez/hci0/dev_4": device("00:AA:01:00:00:04", adapter: "/org/bluez/hci0", name: "Other", rssi: -1),
        ]
        let seen = BlueZCentral.seenDevices(on: "/org/bluez/hci1", in: objects)
        #expect(
            seen == [
                "00:AA:01:00:00:02 \"Strap\" (RSSI -40)", "00:AA:01:00:00:01 (RSSI -80)", "00:AA:01:00:00:03 \"Old\"",
            ])
        let error = ProbeError.notFound(target: "00:AA:01:00:00:09", seconds: 5, seen: seen)
        #expect(error.exitCode == 1)
        #expect(
            error.description.hasPrefix(
                "probe: 00:AA:01:00:00:09 not found within 5 s; the adapter saw 00:AA:01:00:00:02"))
        #expect(
            ProbeError.notFound(target: "x", seconds: 5, seen: []).description
                == "probe: x not found within 5 s; the adapter saw no LE device")
    }

    @Test func rssi127MeansNotAvailableAndIsNotReportedAsDBm() {
        #expect(BlueZCentral.reportedRSSI(127) == nil)
        #expect(BlueZCentral.reportedRSSI(nil) == nil)
        #expect(BlueZCentral.reportedRSSI(-42) == -42)
        #expect(BlueZCentral.reportedRSSI(20) == 20)
    }
}
