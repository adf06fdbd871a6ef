import Foundation
import GATTModel
import ScenarioList
import Testing

@testable import Lab

/// ATT as centrals that bypass bluetoothd's client API see it (gatttool and a raw L2CAP client on hci1), against the
/// real `blemu run` on hci0 (`ATTScenario`: one boot, one guest script, assertions on its files and btmon's trace).
@Suite(
    .needsLab, .needsBlemuRun,
    .labSuiteTimeLimit)
struct ATTScenarioTests {
    /// gatttool's text for each code (5.66 attrib/att.c `att_ecode2str`; 0x80 is its ATT_ECODE_IO).
    static let gatttoolText: [UInt8: String] = [
        0x02: "Attribute can't be read", 0x03: "Attribute can't be written",
        0x05: "Attribute requires authentication before read/write", 0x0D: "Attribute value length is invalid",
        0x0E: "Request attribute has encountered an unlikely error", 0x0F: "Encryption required before read/write",
        0x80: "Internal application error: I/O",
    ]

    /// The run, checked to have finished the script: a failed step names itself in the message.
    private func finishedRun(_ target: LabTarget) async throws -> LabRun {
        try await LabTests.finishedRun(of: ATTScenario.shared, on: target, showing: ["blemu-run.log", "console.log"])
    }

    /// Value handles by characteristic id, as gatttool --characteristics found them.
    private func handles(_ run: LabRun) throws -> [String: Int] {
        var handles: [String: Int] = [:]
        for line in read(run, "handles.txt").split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let handle = Int(parts[1].dropFirst(2), radix: 16) else { continue }
            handles[String(parts[0])] = handle
        }
        try #require(handles.count == 12, "handles.txt: \(read(run, "handles.txt"))")
        return handles
    }

    /// The bytes gatttool printed for a read (`Characteristic value/descriptor: 30 31 ...`); nil when it failed.
    private func gatttoolValue(_ run: LabRun, _ name: String) -> [UInt8]? {
        let output = read(run, "gt-\(name).out")
        guard let range = output.range(of: "Characteristic value/descriptor: ") else { return nil }
        return output[range.upperBound...].prefix { $0 != "\n" }.split(separator: " ").compactMap {
            UInt8($0, radix: 16)
        }
    }

    /// The raw client's line for `operation` in raw-NAME.txt: `ok HEX` or `error 0xNN handle 0xHHHH`.
    private func raw(_ run: LabRun, _ name: String) -> [String] {
        read(run, "raw-\(name).txt").split(separator: "\n").map { line in
            String(line.split(separator: ">", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces)
        }
    }

    /// 5.87 sends notifications where a CCCD enables both (9c36e4189); a central cannot enable both on an
    /// application's characteristic on any version: bluetoothd refuses 0x0003 with 0xFD before blemu hears of it,
    /// so what blemu's queue and event log call an indication is one on the air (docs/bluez.md, "Notifications").
    @Test(arguments: LabScenario.boundingTargets) func aCCCDEnablingNotificationsAndIndicationsAtOnceIsRefusedWith0xFD(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let cccd = try #require(try handles(run)["both"]) + 1
        let refused = String(format: "error 0xfd handle 0x%04x", cccd)
        #expect(raw(run, "cccd") == [refused, "ok", "ok", "ok"], "\(read(run, "raw-cccd.txt"))")
    }

    private func requestEvents(_ run: LabRun, _ operation: String, _ id: String) -> [[String: Any]] {
        events(run).filter {
            $0["type"] as? String == "request" && $0["operation"] as? String == operation
                && $0["characteristic"] as? String == id
        }
    }

    /// The events log's spelling of a value (`Hex`, uppercase, no separator).
    private static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes, separator: "") }

    @Test(arguments: LabScenario.boundingTargets) func everyRefusalAProfileCanCauseReachesTheCentralWithItsExactCode(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        // The raw client's codes are the request list's session `errors` (everySessionOfTheRequestListGetsTheAnswersTheListSays).
        // 0x02, 0x03, 0x05 and 0x0F are bluetoothd's own (`check_permissions`): those requests never reach blemu.
        #expect(requestEvents(run, "read", "write-only").isEmpty && requestEvents(run, "write", "read-only").isEmpty)
        #expect(requestEvents(run, "read", "secret").allSatisfy { $0["result"] as? String == "success" })
        // 0x0D, 0x80 and 0x07 are blemu's answers.
        #expect(requestEvents(run, "write", "limited").contains { $0["code"] as? Int == 0x0D })
        #expect(requestEvents(run, "write", "ruled").contains { $0["code"] as? Int == 0x80 })
        #expect(requestEvents(run, "read", "long").contains { $0["code"] as? Int == 0x07 })
        // gatttool prints att_ecode2str's text for the same codes.
        for (name, code) in [
            ("read-write-only", 0x02), ("write-read-only", 0x03), ("write-limited-9", 0x0D), ("write-ruled-03", 0x80),
        ] {
            let text = try #require(Self.gatttoolText[UInt8(code)])
            #expect(read(run, "gt-\(name).err").contains(text), "\(name): \(read(run, "gt-\(name).err"))")
        }
    }

    /// The list both test levels run (Fixtures/lab-att-requests.txt; level 5 is ATTRequestListTests): every answer
    /// the raw client printed, in order, is the list's, with each error's characteristic as its handle.
    @Test(arguments: LabScenario.boundingTargets) func everySessionOfTheRequestListGetsTheAnswersTheListSays(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let h = try handles(run)
        let list = try ATTRequestList.load()
        try #require(list.sessions.count >= 5, "\(ATTRequestList.path)")
        for session in list.sessions {
            let requests = list.requests(in: session)
            let evidence = tails(run, ["raw-\(session).txt", "raw-\(session).err"])
            #expect(
                raw(run, session) == requests.map { $0.answer(handles: h) },
                "\(ATTRequestList.path):\(requests.first?.line ?? 0): \(session)\n\(evidence)")
        }
    }

    @Test(arguments: LabScenario.boundingTargets) func btmonShowsEachCodeLeaveThePeripheral(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let h = try handles(run)
        let sent = Set(BtmonTrace(capture: run.file("btmon.snoop")).errorsSent(by: "hci0"))
        func error(_ request: UInt8, _ id: String, _ code: UInt8) -> BtmonTrace.ErrorSent {
            BtmonTrace.ErrorSent(request: request, handle: h[id] ?? 0, code: code)
        }
        let expected: [BtmonTrace.ErrorSent] = [
            error(0x0A, "write-only", 0x02), error(0x12, "read-only", 0x03), error(0x12, "limited", 0x0D),
            error(0x12, "ruled", 0x80), error(0x0A, "secret", 0x0F), error(0x0A, "guarded", 0x05),
            error(0x0C, "long", 0x07), error(0x18, "right", 0x0D), error(0x18, "limited", 0x06),
            error(0x18, "limited", 0x0D),
        ]
        for error in expected { #expect(sent.contains(error), "\(error) not in \(sent)") }
        // The 512-byte long write's refused part, on the versions whose length check counts the header.
        #expect(sent.contains(error(0x16, "long", 0x0D)) == Self.countsThePrepareHeader(target.system), "\(sent)")
    }

    @Test(arguments: LabScenario.boundingTargets) func longReadsUseReadBlobAndReturnEveryByte(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let h = try handles(run)
        #expect(gatttoolValue(run, "read-long") == ATTScenario.longInitial, "\(read(run, "gt-read-long.err"))")
        #expect(gatttoolValue(run, "read-big") == ATTScenario.bigValue, "\(read(run, "gt-read-big.err"))")
        let trace = BtmonTrace(capture: run.file("btmon.snoop"))
        for id in ["long", "big"] {
            let handle = try #require(h[id])
            let reads = trace.received(0x0A, handle: handle, on: "hci0").count
            let blobs = trace.received(0x0C, handle: handle, on: "hci0")
            #expect(!blobs.isEmpty, "\(id) was read without Read Blob")
            // Every Read and Read Blob the central sent reached blemu as one ReadValue (events.jsonl).
            #expect(requestEvents(run, "read", id).count == reads + blobs.count, "\(id)")
        }
        let bigBlobs = trace.received(0x0C, handle: h["big"] ?? 0, on: "hci0").compactMap(\.offset)
        #expect(bigBlobs == Array(bigBlobs.sorted()) && bigBlobs.last.map { $0 < 512 } == true, "\(bigBlobs)")
    }

    @Test(arguments: LabScenario.boundingTargets) func plainAndPreparedWritesAreStoredAndReadBack(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let h = try handles(run)
        #expect(gatttoolValue(run, "read-plain") == ATTScenario.plainWrite)
        #expect(gatttoolValue(run, "read-prepared") == ATTScenario.preparedWrite)
        #expect(gatttoolValue(run, "read-ruled") == [0x02])
        #expect(gatttoolValue(run, "read-after-508") == (0..<508).map { UInt8($0 & 0xFF) })
        // The 50 bytes went as several Prepare Write parts but reached blemu as one write of the whole value.
        let trace = BtmonTrace(capture: run.file("btmon.snoop"))
        let parts = trace.received(0x16, handle: h["long"] ?? 0, on: "hci0")
        #expect(parts.count > 2, "Prepare Write parts for long: \(parts.count)")
        let written = requestEvents(run, "write", "long").compactMap { $0["value"] as? String }
        var expected = [ATTScenario.plainWrite, ATTScenario.preparedWrite, (0..<508).map { UInt8($0 & 0xFF) }]
        // 5.69 (8bf3a4a26) stopped counting the Prepare Write header as value: the 512-byte long write arrives too.
        if Self.countsThePrepareHeader(target.system) == false { expected.append(Self.descending512) }
        #expect(written == expected.map(Self.hex), "\(written.map { $0.prefix(40) })")
    }

    /// The 512 bytes the scenario writes last to `long` (255, 254, ... repeating).
    static let descending512 = (0..<512).map { UInt8(255 - $0 % 256) }

    /// Whether `check_length` counts the 4-byte Prepare Write header as value (src/shared/gatt-server.c), refusing
    /// a long write's part that ends past byte 508: until 5.69 (commit 8bf3a4a26).
    static func countsThePrepareHeader(_ system: LabSystem) -> Bool { !system.bluez.isAtLeast("5.69") }

    @Test(arguments: LabScenario.boundingTargets) func aLongWriteOfOneCharacteristicIsAppliedWholeOrNotAtAll(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        #expect(read(run, "gt-write-prepared-limited.err").contains(Self.gatttoolText[0x0D] ?? "?"))
        #expect(gatttoolValue(run, "read-limited") == [0x00], "nothing of the 30 bytes stored")
        let refused = requestEvents(run, "write", "limited").filter { ($0["value"] as? String)?.count == 60 }
        #expect(
            refused.count == 1 && refused.first?["code"] as? Int == 0x0D, "one merged write of 30 bytes: \(refused)")
        if Self.countsThePrepareHeader(target.system) {
            // 5.66 refuses the Prepare Write part for bytes 504...511 (it counts the 4 header bytes): nothing
            // reaches blemu and the 508-byte value stays.
            #expect(read(run, "gt-write-prepared-512.err").contains(Self.gatttoolText[0x0D] ?? "?"))
            #expect(gatttoolValue(run, "read-after-512") == (0..<508).map { UInt8($0 & 0xFF) })
            #expect(requestEvents(run, "write", "long").allSatisfy { ($0["value"] as? String)?.count != 1024 })
        } else {
            // 5.69+: all 512 bytes, the longest value an attribute may have, arrive as one write and read back.
            #expect(!read(run, "gt-write-prepared-512.err").contains(Self.gatttoolText[0x0D] ?? "?"))
            #expect(gatttoolValue(run, "read-after-512") == Self.descending512)
        }
    }

    @Test(arguments: LabScenario.boundingTargets)
    func aReliableWriteOfTwoCharacteristicsKeepsTheFirstWhenTheSecondIsRefused(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        // What the central got is the request list's sessions `reliable-bad`, `reliable-good` and `unreliable`
        // (everySessionOfTheRequestListGetsTheAnswersTheListSays): here, what reached blemu.
        #expect(requestEvents(run, "write", "left").compactMap { $0["value"] as? String } == ["11111111", "33333333"])
    }

    @Test(arguments: LabScenario.boundingTargets) func everyRequestThePeripheralReceivedGotExactlyOneAnswer(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let (requests, answers, cutOff) = BtmonTrace(capture: run.file("btmon.snoop")).requestsAndAnswers(on: "hci0")
        #expect(requests.values.reduce(0, +) > 100, "\(requests)")
        // A request whose link went down first cannot be answered: seen on bonded reconnects, where bluetoothd held
        // a read while raising the link's security and the link dropped (docs/bluez.md). The fixture retries such a
        // read (the Just Works read and the medium-security one) and counts the retries: each may have cut off one
        // read. The guarded read after them may meet the same end (the central's bluetoothd asks for a MITM pairing
        // the Just Works peripheral cannot give, and the failed pairing drops the link): gatttool then reports 0x0E
        // instead of 0x05. Nothing else may be cut off.
        #expect(requests == answers.merging(cutOff, uniquingKeysWith: +), "cut off: \(cutOff)")
        let retries = ["secret-retries", "secret-medium-retries"].reduce(0) { sum, file in
            sum + (Int(read(run, file).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0)
        }
        let guardedCutOff = read(run, "gt-read-guarded.err").contains(Self.gatttoolText[0x0E] ?? "?") ? 1 : 0
        #expect(
            cutOff.values.reduce(0, +) <= max(1, retries + guardedCutOff),
            "\(cutOff), \(retries) retries, guarded read cut off: \(guardedCutOff)")
        // Every ReadValue/WriteValue blemu received has one answer in its log and one event with a result.
        // Write Commands are answered by bluetoothd, so blemu logs them as expecting no reply instead.
        let logged = read(run, "blemu-run.log").split(separator: "\n").filter {
            ($0.contains("] read ") || $0.contains("] write "))
                && ($0.contains(" -> ") || $0.contains("no reply expected"))
        }
        let requestEvents = events(run).filter { $0["type"] as? String == "request" }
        #expect(requestEvents.allSatisfy { $0["result"] is String })
        #expect(requestEvents.count == logged.count, "\(requestEvents.count) events, \(logged.count) answers logged")
        print("ATT lab: hci0 answered \(answers.values.reduce(0, +)) ATT requests; blemu \(requestEvents.count)")
    }

    @Test(arguments: LabScenario.boundingTargets) func writeCommandsStreamThroughAcquireWriteInOrder(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        // What the central got is the request list's session `stream` (everySessionOfTheRequestListGetsTheAnswersTheListSays).
        // bluetoothd calls AcquireWrite once, on the connection's first write, and then sends every value down the
        // socket (5.69+ acquires once per connection, 8eb1dee87: the scenario keeps to one).
        #expect(read(run, "bluetoothd.log").contains("AcquireWrite success"))
        #expect(read(run, "blemu-run.log").components(separatedBy: "stream: AcquireWrite by").count == 2)
        let streamed = requestEvents(run, "write", "stream")
        #expect(streamed.compactMap { $0["value"] as? String } == ["A0A1A2A3", "01020304", "0506", "0708090A0B"])
        #expect(streamed.allSatisfy { $0["central"] as? String == "*" })
        // Over max-length 4: the central heard nothing (a Write Command has no answer); blemu refused to store it.
        #expect(streamed.map { $0["code"] as? Int } == [nil, nil, nil, 0x0D])
    }

    @Test(arguments: LabScenario.boundingTargets) func justWorksPairingTurnsTheRefusedReadIntoTheValue(
        target: LabTarget
    ) async throws {
        let run = try await finishedRun(target)
        let h = try handles(run)
        let secret = Array("secret".utf8)
        // Unpaired: Insufficient Encryption (raw client). gatttool's bt_att answers it by raising the link's
        // security: the kernel pairs (Just Works) and the same read returns the value.
        #expect(raw(run, "errors")[4] == String(format: "error 0x0f handle 0x%04x", h["secret"] ?? 0))
        // gatttool's retry can overtake the peripheral's side of the pairing (its agent is still asked) and be
        // refused again, or fail in gatttool itself (0x0E, nothing on air); the fixture reads once more, paired.
        let tries = ["", "-again", "-again-2", "-again-3"].map { "read-secret" + $0 }
        #expect(
            tries.lazy.compactMap { gatttoolValue(run, $0) }.first == secret,
            "\(tries.map { read(run, "gt-\($0).err") })")
        let btmon = read(run, "btmon.txt")
        #expect(btmon.contains("SMP: Pairing Request") && btmon.contains("Encryption: Enabled"))
        #expect(read(run, "blemu-run.log").contains("agent: RequestAuthorization"))
        // Bonded: the peripheral asks for security on each new link, so even the raw client reads it.
        #expect(raw(run, "secret-after-pairing") == ["ok " + Self.hex(secret)])
        #expect(btmon.contains("SMP: Security Request"))
        let attempts = ["", "-again", "-again-2", "-again-3"].map { "read-secret-medium" + $0 }
        #expect(
            attempts.lazy.compactMap { gatttoolValue(run, $0) }.first == secret,
            "\(attempts.map { read(run, "gt-\($0).err") })")
        // Just Works keys are unauthenticated: the authenticated read stays refused (0x05 on the air), and
        // gatttool's attempt to pair with MITM protection fails and drops the link.
        #expect(gatttoolValue(run, "read-guarded") == nil)
        #expect(btmon.contains("Reason: Authentication requirements (0x03)"))
        #expect(requestEvents(run, "read", "guarded").isEmpty, "bluetoothd refuses it before blemu")
    }

    /// Every step of Fixtures/lab-att.sh ran, once each and in the script's order (a step skipped or repeated would
    /// leave later tests asserting on files of another moment); the timings go to the test log.
    @Test(arguments: LabScenario.boundingTargets) func everyStepOfTheScriptRanOnceInOrder(
        target: LabTarget
    ) async throws {
        let run = try await ATTScenario.shared.run(on: target)
        let script = try String(contentsOfFile: LabScenario.fixtures + "/lab-att.sh", encoding: .utf8)
        // The step's name as the shell passes it: `step 'done'` is quoted so that the linter does not take a keyword.
        let planned = script.split(separator: "\n").filter { $0.hasPrefix("step ") }.map {
            String($0.dropFirst(5)).trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        }
        let steps = read(run, "scenario-steps").split(separator: "\n").compactMap { $0.split(separator: " ").last }
        #expect(planned.count >= 10)
        #expect(steps.map(String.init) == planned, "\(tails(run, ["scenario-steps", "command.log"]))")
        print(
            "ATT lab: qemu start to command \(run.untilCommand.map(LabMachine.seconds) ?? "?"), "
                + "total \(LabMachine.seconds(run.total))")
    }
}
