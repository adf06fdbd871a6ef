import BlueZModel
import Foundation
import Testing

@testable import BlemuCLI

/// `blemu doctor`'s output and its reading of the bus policy, without a bus.
struct DoctorCommandTests {
    private let findings = [
        HostFinding("bus", .ok, "connected to the system bus"),
        HostFinding("adapter-powered", .fail, "hci0 is powered off", fix: "bluetoothctl power on"),
        HostFinding("main-conf-device-id", .warn, "DeviceID is not set", fix: "set DeviceID = false"),
        HostFinding("trial", .skip, "not run: a check above failed"),
    ]

    @Test func theVerdictIsTheWorstStatusAndSkipsDoNotCount() {
        #expect(DoctorCommand.verdict(findings) == .fail)
        #expect(DoctorCommand.verdict(Array(findings.dropFirst(2))) == .warn)
        #expect(DoctorCommand.verdict([HostFinding("trial", .skip, "not run")]) == .ok)
    }

    @Test func theTextIsOneLinePerCheckWithTheFixBeneath() {
        #expect(
            DoctorCommand.text(findings, verdict: .fail).split(separator: "\n") == [
                "ok    bus: connected to the system bus",
                "fail  adapter-powered: hci0 is powered off",
                "      fix: bluetoothctl power on",
                "warn  main-conf-device-id: DeviceID is not set",
                "      fix: set DeviceID = false",
                "skip  trial: not run: a check above failed",
                "verdict: fail (1 failed, 1 warnings)",
            ])
    }

    @Test func theJSONHasTheVerdictAndEveryCheckWithANullFixWhereNoneIsDue() throws {
        let json = DoctorCommand.json(findings, verdict: .fail)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "fail")
        let checks = try #require(object["checks"] as? [[String: Any]])
        #expect(checks.map { $0["id"] as? String } == ["bus", "adapter-powered", "main-conf-device-id", "trial"])
        #expect(checks[0]["fix"] is NSNull && checks[1]["fix"] as? String == "bluetoothctl power on")
        #expect(Set(checks[1].keys) == ["id", "status", "detail", "fix"])
    }

    @Test func thePolicyNamesTheGroupsAndWhetherEveryUserMaySend() throws {
        let directory = NSTemporaryDirectory() + "blemu-policy-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let debian = """
            <busconfig>
              <policy user="root">
                <allow own="org.bluez"/>
                <allow send_destination="org.bluez"/>
              </policy>
              <policy group="bluetooth">
                <allow send_destination="org.bluez"/>
              </policy>
              <policy context="default">
                <allow send_destination="org.bluez"/>
              </policy>
            </busconfig>
            """
        try debian.write(toFile: directory + "/debian.conf", atomically: true, encoding: .utf8)
        let strict = debian.replacingOccurrences(
            of: "  <policy context=\"default\">\n    <allow send_destination=\"org.bluez\"/>\n  </policy>\n", with: "")
        try strict.write(toFile: directory + "/strict.conf", atomically: true, encoding: .utf8)
        let open = HostDoctor.policy([directory + "/debian.conf"])
        #expect(open.groups == ["bluetooth"] && open.everyone)
        let closed = HostDoctor.policy([directory + "/strict.conf", directory + "/missing.conf"])
        #expect(closed.groups == ["bluetooth"] && !closed.everyone)
    }
}
