import Foundation
import Testing

@testable import Lab

/// Pairing with the real `blemu run` from a central that types passkeys (`PairingScenario`: one boot, one guest
/// script, assertions on its files): a fixed passkey works only when it is the one typed, and a displayed passkey
/// reaches the central through the control socket.
@Suite(
    .needsLab, .needsBlemuRun,
    .labSuiteTimeLimit)
struct PairingScenarioTests {
    private static let logs = [
        "secure-run.log", "display-run.log", "wrong-passkey.err", "right-passkey.err", "displayed-passkey.err",
    ]

    private func finishedRun(_ target: LabTarget) async throws -> LabRun {
        try await LabTests.finishedRun(of: PairingScenario.shared, on: target, showing: Self.logs)
    }

    /// A results file holding one JSON object; a failure shows the file and the tails of `logs`.
    private func object(_ run: LabRun, _ file: String, showing logs: [String] = []) throws -> [String: Any] {
        let text = read(run, file)
        return try #require(
            try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            "\(file): \(text)\n\(tails(run, logs))")
    }

    /// A result file of pairing_central.py, with its stderr when it does not parse.
    private func central(_ run: LabRun, _ name: String) throws -> [String: Any] {
        try object(run, name + ".json", showing: [name + ".err"])
    }

    /// The peripheral's `pairing` event lines.
    private func pairings(_ run: LabRun, _ events: String) -> [[String: Any]] {
        LabTests.events(run, events).filter { $0["type"] as? String == "pairing" }
    }

    @Test func theProfilesPasskeyIsKnown() {
        #expect(PairingScenario.passkey.count == 6, "blemu show --json profiles/secure.yaml has no pairing passkey")
    }

    @Test(arguments: LabScenario.targets) func aWrongPasskeyFailsThePairing(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let result = try central(run, "wrong-passkey")
        #expect(result["typed"] as? String == PairingScenario.wrongPasskey, "\(result)")
        #expect(result["pair"] as? String != "ok", "\(result)")
        #expect(result["read"] == nil, "nothing is read after a failed pairing: \(result)")
        // blemu's agent typed the profile's passkey: the two sides disagreed, as SMP's confirm check found.
        let typed = pairings(run, "secure-events.jsonl").first
        #expect(typed?["method"] as? String == "request-passkey", "\(tails(run, ["secure-events.jsonl"]))")
        #expect(typed?["passkey"] as? String == PairingScenario.passkey)
    }

    @Test(arguments: LabScenario.targets) func theProfilesPasskeyPairsWithAuthentication(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let result = try central(run, "right-passkey")
        #expect(result["pair"] as? String == "ok", "\(result)\n\(tails(run, ["bluetoothd.log"], lines: 40))")
        #expect(result["agent"] as? [String] == ["RequestPasskey"], "the central's side is asked its own agent")
        #expect(result["typed"] as? String == PairingScenario.passkey)
        #expect(result["read"] as? String == PairingScenario.hex(PairingScenario.email), "\(result)")
        // `status` needs an authenticated link to write: both sides typed, so the key is authenticated.
        #expect(result["write"] as? String == "ok", "\(result)")
        let status = try object(run, "status-after-write.json")
        let hex = (status["hex"] as? String)?.replacingOccurrences(of: " ", with: "")
        #expect(hex?.uppercased() == PairingScenario.hex(PairingScenario.writtenStatus), "\(status)")
        // The control socket lists both pairings' steps, oldest first.
        let steps = try object(run, "right-passkey-ctl.json")["pairings"] as? [[String: Any]] ?? []
        #expect(steps.map { $0["method"] as? String } == ["request-passkey", "request-passkey"], "\(steps)")
        #expect(steps.allSatisfy { $0["passkey"] as? String == PairingScenario.passkey })
    }

    @Test(arguments: LabScenario.targets) func theCentralTypesThePasskeyBlemuDisplays(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let result = try central(run, "displayed-passkey")
        #expect(result["pair"] as? String == "ok", "\(result)\n\(tails(run, ["bluetoothd.log"], lines: 40))")
        let shown = pairings(run, "display-events.jsonl").filter { $0["method"] as? String == "display-passkey" }
        #expect(shown.count == 1, "\(tails(run, ["display-events.jsonl"]))")
        let displayed = try #require(shown.first?["passkey"] as? String)
        #expect(displayed.count == 6)
        #expect(result["typed"] as? String == displayed, "\(result)")
        #expect(result["read"] as? String == PairingScenario.hex(PairingScenario.code), "\(result)")
    }
}
