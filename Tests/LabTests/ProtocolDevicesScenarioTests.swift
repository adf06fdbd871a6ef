import Foundation
import Testing

@testable import Lab

/// The protocol devices as their centrals see them on real bluetoothd (`ProtocolDevicesScenario`): every exchange
/// answered as the specification says, in order, and each request answered exactly once.
@Suite(.needsLab, .needsBlemuRun, .labSuiteTimeLimit)
struct ProtocolDevicesScenarioTests {
    static let cases = LabScenario.boundingSystems.flatMap { system in
        ProtocolDevicesScenario.devices.map { (system, $0) }
    }

    @Test(arguments: cases)
    func theCentralPassesEveryCheck(system: LabSystem, device: ProtocolDevicesScenario.Device) async throws {
        let run = try await ProtocolDevicesScenario.shared.run(on: system)
        let output = (try? String(contentsOfFile: run.file(device.name + ".txt"), encoding: .utf8)) ?? ""
        let status = (try? String(contentsOfFile: run.file(device.name + "-rc"), encoding: .utf8)) ?? ""
        #expect(status.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(output)")
        let passed = output.split(separator: "\n").filter { $0.hasPrefix("ok   ") }
        #expect(passed.count == device.checks, "\(output)")
        #expect(!output.contains("FAIL"), "\(output)")
    }

    /// `blemu verify --writes` on the served sensor: every exchange its profile declares passes; with a handler
    /// planting one wrong indication, that exchange alone fails, naming what was sent, expected and seen.
    @Test(arguments: LabScenario.boundingSystems)
    func verifyMakesTheDeclaredExchangesAndFindsAPlantedWrongAnswer(system: LabSystem) async throws {
        let run = try await ProtocolDevicesScenario.shared.run(on: system)
        let name = ProtocolDevicesScenario.verified.name
        func checks(_ file: String) throws -> (status: String, checks: [[String: Any]]) {
            let status = (try? String(contentsOfFile: run.file("\(name).\(file)-rc"), encoding: .utf8)) ?? ""
            let errors = (try? String(contentsOfFile: run.file("\(name).\(file).err"), encoding: .utf8)) ?? ""
            let object = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: run.file("\(name).\(file).json")))) as? [String: Any],
                "\(errors)")
            return (status.trimmingCharacters(in: .whitespacesAndNewlines), object["checks"] as? [[String: Any]] ?? [])
        }
        let right = try checks("verify")
        let exchanges = right.checks.filter { ($0["check"] as? String)?.hasPrefix("answers ") == true }
        #expect(right.status == "0", "\(right.checks.filter { $0["status"] as? String == "fail" })")
        #expect(exchanges.count == 6 && exchanges.allSatisfy { $0["status"] as? String == "pass" }, "\(exchanges)")
        let planted = try checks("defect")
        let failed = planted.checks.filter { $0["status"] as? String == "fail" }
        #expect(planted.status == "1", "\(failed)")
        #expect(
            failed.map { $0["check"] as? String } == ["answers request-supported-sensor-locations (case 5)"],
            "\(failed)")
        #expect(
            failed.first?["expected"] as? String
                == "accepted, then sc-control-point 10 04 01 04 05 0B 0C (case 5: op is request-supported-sensor-locations)",
            "\(failed)")
        #expect(
            failed.first?["actual"] as? String == "04 accepted; sent sc-control-point 10 04 01 04 05 0B 0E", "\(failed)"
        )
    }

    /// Requests = answers for each device, in the lab's summary and in its event log, one `request` line each and
    /// one `protocol` line for each write a protocol answered.
    @Test(arguments: LabScenario.boundingSystems)
    func everyRequestIsAnsweredOnce(system: LabSystem) async throws {
        let run = try await ProtocolDevicesScenario.shared.run(on: system)
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: run.file("summary.json"))))
                as? [String: Any])
        let peripherals = summary["peripherals"] as? [[String: Any]] ?? []
        #expect(peripherals.count == ProtocolDevicesScenario.devices.count, "\(summary)")
        for peripheral in peripherals {
            let controller = peripheral["controller"] as? String ?? "?"
            let requests = peripheral["requests"] as? Int ?? -1
            #expect(requests >= 3, "the session's reads and writes: \(peripheral)")
            #expect(
                peripheral["answered"] as? Int == requests && peripheral["unanswered"] as? Int == 0, "\(peripheral)")
            let events = (try? String(contentsOfFile: run.file("events-\(controller).jsonl"), encoding: .utf8)) ?? ""
            let lines = events.split(separator: "\n")
            let requestLines = lines.filter { $0.contains(#""type":"request""#) }
            #expect(requestLines.count == requests, "\(controller): \(requestLines.count) lines, \(requests) requests")
            // Each write a protocol or a handler answered has its `protocol` or `handler` line; the UART's writes
            // are a write rule's. A write the handler handed back to the profile has both: the protocol's counts.
            let decided = lines.filter {
                $0.contains(#""type":"protocol""#)
                    || ($0.contains(#""type":"handler""#) && !$0.contains(#""outcome":"profile""#))
            }
            let controlWrites = requestLines.filter {
                $0.contains(#""operation":"write""#) && !$0.contains(#""characteristic":"rx""#)
            }
            #expect(decided.count == controlWrites.count, "\(controller): one protocol or handler line per write")
        }
    }
}
