import Emulation
import Foundation
import GATTModel
import Peripheral
import PeripheralTesting
import Synchronization
import Testing

@Suite struct StateRestorationTests {
    @Test func temporaryFilesOfKilledSavesAreRemovedAndALiveSaveIsKept() throws {
        let directory = try temporaryDirectory()
        let profile = try bundledProfile("thermostat")
        // A pid no process has (above Linux's pid_max default), as a `kill -9` during a save leaves behind.
        let stale = directory + "/living-room.json.tmp-4194400"
        let live = directory + "/living-room.json.tmp-\(getpid())"
        let other = directory + "/kitchen.json.tmp-4194400"
        for file in [stale, live, other] {
            #expect(FileManager.default.createFile(atPath: file, contents: Data("{".utf8)))
        }
        let store = StateStore(restoreID: "living-room", directory: directory, profile: profile)
        #expect(store.restore() == nil)
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(FileManager.default.fileExists(atPath: live), "a save in progress is not touched")
        #expect(FileManager.default.fileExists(atPath: other), "another restore id's files are not touched")
    }

    @Test func writtenValuesComeBackAfterACrashAsWillRestoreStateFirst() async throws {
        let directory = try temporaryDirectory()
        let profile = try bundledProfile("thermostat")
        do {
            let store = StateStore(restoreID: "living-room", directory: directory, profile: profile)
            #expect(store.restore() == nil)
            let rig = try await Rig(profile, stateStore: store)
            await rig.start()
            let central = VirtualCentral(connectingTo: rig.backend, security: .encrypted)
            try await central.write([0x02], to: "mode")
            // No shutdown: everything is simply dropped, as in a crash.
        }
        let store = StateStore(restoreID: "living-room", directory: directory, profile: profile)
        let restored = try #require(store.restore())
        #expect(restored.values["mode"] == [0x02])
        let rig = try await Rig(profile, stateStore: store, restoring: restored)
        let first = await rig.manager.nextEvent { _ in true }
        #expect(first == .willRestoreState(restored))
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        #expect(try await central.read("mode") == [0x02])
    }

    @Test func savedSubscriptionsAreReportedButNotLiveUntilTheCentralSubscribesAgain() async throws {
        let directory = try temporaryDirectory()
        let profile = try bundledProfile("heart-rate")
        do {
            let store = StateStore(restoreID: "strap", directory: directory, profile: profile)
            let rig = try await Rig(profile, stateStore: store)
            await rig.start()
            try await rig.subscribe(VirtualCentral(connectingTo: rig.backend, id: "phone"), to: "battery-level")
            #expect(store.current.subscriptions == ["battery-level": ["phone"]])
        }
        let store = StateStore(restoreID: "strap", directory: directory, profile: profile)
        let restored = try #require(store.restore())
        #expect(restored.subscriptions == ["battery-level": ["phone"]])
        let rig = try await Rig(profile, stateStore: store, restoring: restored)
        await rig.start()
        // willRestoreState is handled before the first state change.
        _ = await rig.recorder.next { if case .stateChanged = $0 { true } else { false } }
        let battery = try #require(profile.characteristics.first { $0.id == "battery-level" })
        #expect(await rig.manager.subscribedCentrals(of: battery).isEmpty)
        #expect(store.current.subscriptions.isEmpty, "the file must not claim a subscription the stack forgot")
        try await rig.subscribe(VirtualCentral(connectingTo: rig.backend, id: "phone"), to: "battery-level")
        #expect(store.current.subscriptions == ["battery-level": ["phone"]])
    }

    /// A state file holding what no central could have written (600 bytes where 2 fit, a value the
    /// write rules refuse, a read-only characteristic) was restored and served as it was.
    @Test func restoredValuesPassTheChecksAWritePassesAndTheRestAreSkipped() async throws {
        let directory = try temporaryDirectory()
        let profile = try bundledProfile("thermostat")
        // A file as blemu writes it (version, profile, fingerprint), then edited as a user or a bug might.
        await StateStore(restoreID: "edited", directory: directory, profile: profile).recordWrites([
            "mode": [0x02], "set-point": [0x34, 0x08], "temperature": [0x00, 0x00],
            "humidity": [UInt8](repeating: 0, count: 600),
        ])
        let path = directory + "/edited.json"
        var file = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        var values = try #require(file["values"] as? [String: String])
        values["set-point"] = "FFFF"  // -0.01 °C: under the rule's 5.00 °C
        values["ghost"] = "01"
        file["values"] = values
        try JSONSerialization.data(withJSONObject: file).write(to: URL(fileURLWithPath: path))
        let restored = try #require(StateStore(restoreID: "edited", directory: directory, profile: profile).restore())
        #expect(restored.values == ["mode": [0x02]])
    }

    @Test func corruptStateFileIsRenamedAsideNotFatal() async throws {
        let directory = try temporaryDirectory()
        let profile = try bundledProfile("thermostat")
        try "{ not json".write(toFile: directory + "/r.json", atomically: true, encoding: .utf8)
        let store = StateStore(restoreID: "r", directory: directory, profile: profile)
        #expect(store.restore() == nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.contains { $0.hasPrefix("r.json.corrupt-") } && !names.contains("r.json"))
        await store.recordWrites(["mode": [0x03]])
        #expect(
            StateStore(restoreID: "r", directory: directory, profile: profile).restore()?.values == ["mode": [0x03]])
    }

    @Test func stateFileSpellsHexAsBlemuDoesAndStillReadsLowercase() async throws {
        let directory = try temporaryDirectory()
        let profile = try bundledProfile("thermostat")
        // 25.00 °C, a set point the write rules accept (restored values pass them).
        await StateStore(restoreID: "h", directory: directory, profile: profile).recordWrites([
            "set-point": [0xC4, 0x09]
        ])
        let text = try String(contentsOfFile: directory + "/h.json", encoding: .utf8)
        #expect(text.contains("\"C409\"") && !text.contains("c409"))
        // A file from before the spelling was unified.
        try text.replacingOccurrences(of: "C409", with: "c409").write(
            toFile: directory + "/h.json", atomically: true, encoding: .utf8)
        #expect(
            StateStore(restoreID: "h", directory: directory, profile: profile).restore()?.values["set-point"] == [
                0xC4, 0x09,
            ])
    }

    @Test func stateFileOfAnotherProfileIsIgnored() async throws {
        let directory = try temporaryDirectory()
        await StateStore(restoreID: "x", directory: directory, profile: try bundledProfile("heart-rate"))
            .recordWrites(["heart-rate-control-point": [0x01]])
        #expect(
            StateStore(restoreID: "x", directory: directory, profile: try bundledProfile("thermostat")).restore() == nil
        )
    }

    /// `recordWrites` returns only once its values are in the file, also when many arrive at once and the writer
    /// commits them in groups: what a write's answer waits for is the disk, never another request's thread.
    @Test func eachRecordedWriteIsInTheFileWhenItReturnsWhateverArrivesAtOnce() async throws {
        let directory = try temporaryDirectory()
        let store = StateStore(restoreID: "many", directory: directory, profile: try bundledProfile("thermostat"))
        let path = directory + "/many.json"
        @Sendable func saved() -> [String: String] {
            let data = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            let file = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            return file?["values"] as? [String: String] ?? [:]
        }
        let missing = await withTaskGroup(of: String?.self) { group in
            for index in 0..<40 {
                group.addTask {
                    await store.recordWrites(["k\(index)": [UInt8(index)]])
                    return saved()["k\(index)"] == StateStoreHex.of(UInt8(index)) ? nil : "k\(index)"
                }
            }
            var missing: [String] = []
            for await key in group { if let key { missing.append(key) } }
            return missing
        }
        #expect(missing.isEmpty, "returned before on disk: \(missing)")
        #expect(saved().count == 40)
    }
}

/// One byte as the state file spells it.
private enum StateStoreHex {
    static func of(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }
}
