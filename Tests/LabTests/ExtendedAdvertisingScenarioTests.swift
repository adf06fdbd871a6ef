import Foundation
import Testing

@testable import Lab

/// Extended advertising on real bluetoothd: BlueZ 5.82 sends the 152 bytes `blemu adv` predicts and a
/// central receives them whole; BlueZ 5.66, which caps advertising data at 31 bytes, is refused with one line
/// naming the fix (`ExtendedAdvertisingScenario`: one boot per version, dual-mode controllers).
@Suite(
    .needsLab, .needsBlemuRun,
    .labSuiteTimeLimit)
struct ExtendedAdvertisingScenarioTests {
    /// What `blemu adv --json` predicts for the scenario's profile, as bytes.
    private func predicted() throws -> [UInt8] {
        let output = LabScenario.blemu(["adv", "--json", ExtendedAdvertisingScenario.profile])
        let json = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
        #expect(json["mode"] as? String == "extended")
        let hex = try #require(json["adv"] as? String)
        return stride(from: 0, to: hex.count, by: 2).compactMap { offset in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
        }
    }

    private func finishedRun(_ target: LabTarget) async throws -> LabRun {
        try await LabTests.finishedRun(
            of: ExtendedAdvertisingScenario.shared, on: target, showing: ["blemu-run.log", "bluetoothd.log"])
    }

    /// Whether this BlueZ sends more than 31 bytes of advertising data (5.69 and later).
    private static func sendsExtendedData(_ system: LabSystem) -> Bool {
        let parts = system.bluez.version.split(separator: ".").compactMap { Int($0) }
        return parts.count >= 2 && (parts[0], parts[1]) >= (5, 69)
    }

    @Test(arguments: LabScenario.targets) func aCentralReceivesTheExtendedAdvertisementWholeAsBlemuAdvPredicts(
        target: LabTarget
    ) async throws {
        guard Self.sendsExtendedData(target.system) else { return }
        let run = try await finishedRun(target)
        let expected = try predicted()
        #expect(expected.count == 152)
        let capture = try BTSnoop(
            Array(try Data(contentsOf: URL(fileURLWithPath: run.resultsDirectory + "/btmon.snoop"))))
        // What the host programmed into hci0, then what hci1 received from hci0's address.
        #expect(capture.advertisingData(index: 0).last == expected, "\(capture.advertisingData(index: 0))")
        let peripheral = try #require(run.controllers.first?.address)
        let received = capture.advertisingReports.filter { $0.index == 1 && $0.address == peripheral }
        try #require(!received.isEmpty, "no report from \(peripheral)\n\(tails(run, ["find.txt", "blemu-run.log"]))")
        #expect(received.allSatisfy { !$0.isLegacy && $0.isComplete }, "\(received)")
        #expect(received.allSatisfy { $0.data == expected }, "\(received.map(\.data))")
        #expect(read(run, "blemu-run-rc").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test(arguments: LabScenario.targets) func bluetoothdBefore569RefusesItAndBlemuSaysWhatToDoInOneLine(
        target: LabTarget
    ) async throws {
        guard !Self.sendsExtendedData(target.system) else { return }
        let run = try await finishedRun(target)
        #expect(read(run, "blemu-run-rc").trimmingCharacters(in: .whitespacesAndNewlines) == "69")
        let log = read(run, "blemu-run.log")
        let refusal = log.split(separator: "\n").filter { $0.contains("extended advertising unavailable") }
        #expect(refusal.count == 1, "\(log)")
        #expect(refusal.first?.contains("BlueZ >= 5.69") == true, "\(log)")
        #expect(refusal.first?.contains("`mode: legacy`") == true, "\(log)")
    }
}
