import BlueZTesting
import ControlProtocol
import Emulation
import Foundation
import GATTModel
import GATTProfile
import ScenarioList
import Testing

/// Level 5 of the one request list (Tests/LabTests/Fixtures/lab-att-requests.txt): the real `blemu run` serves
/// lab-att.yaml with `--acquire-write` against the fake bluetoothd, and each session of the list goes through the
/// fake as a central's requests. The lab runs the same list against real bluetoothd (ATTScenarioTests): an answer
/// that differs between the two shows the fake is wrong.
@Suite(
    .enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: ChildProcess.blemu), "needs the built blemu"),
    .serialized, .timeLimit(.minutes(2)))
struct ATTRequestListTests {
    static let fixtures = ChildProcess.repositoryRoot + "/Tests/LabTests/Fixtures"

    /// The answer lab-att-client.py would print for `result`, with an error naming its characteristic's id.
    private static func answer(_ error: ATTError, _ id: String?) -> String {
        String(format: "error 0x%02x ", error.rawValue) + (id ?? "0")
    }

    private static func answer(_ read: Result<[UInt8], ATTError>, _ id: String) -> String {
        switch read {
        case .success(let value): value.isEmpty ? "ok" : "ok " + Hex.string(value, separator: "").lowercased()
        case .failure(let error): answer(error, id)
        }
    }

    @Test func everySessionGetsTheAnswersTheListSays() async throws {
        let list = try ATTRequestList.load()
        try #require(list.sessions.count >= 5, "\(ATTRequestList.path)")
        let profile = try #require(ProfileLoader.load(path: Self.fixtures + "/lab-att.yaml").profile)
        let characteristics = profile.services.flatMap(\.characteristics)
        let uuids = Dictionary(uniqueKeysWithValues: characteristics.map { ($0.id, $0.uuid) })
        let ids = Dictionary(uniqueKeysWithValues: characteristics.map { ($0.uuid, $0.id) })

        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address)
        let directory = "/tmp/blemu-att-list-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let control = directory + "/control.sock"
        let run = try ChildProcess(
            ChildProcess.blemu,
            [
                "run", Self.fixtures + "/lab-att.yaml", "--bus", bus.address, "--acquire-write", "--control", control,
                "--events", directory + "/events.jsonl",
            ], outputIn: directory)
        let isAdvertising = await FileWait.until(run.stdoutPath, contains: "advertising \"", within: .seconds(30))
        try #require(isAdvertising, "blemu run did not advertise:\n\(run.stdout)\n\(run.stderr)")

        for (number, session) in list.sessions.enumerated() {
            let central = try await fake.connect(address: String(format: "11:22:33:44:55:%02X", number + 1))
            for request in list.requests(in: session) {
                let fields = request.fields
                let id = fields.count > 1 ? fields[1] : ""
                let attribute = AttributeReference(stringLiteral: uuids[id]?.description ?? id)
                let bytes = { (index: Int) in Hex.bytes(fields[index]) ?? [] }
                let actual: String
                switch fields[0] {
                case "read": actual = Self.answer(await fake.read(attribute, by: central), id)
                case "blob":
                    let offset = UInt16(fields[2]) ?? 0
                    actual = Self.answer(await fake.read(attribute, offset: offset, by: central), id)
                case "write":
                    actual = await fake.write(attribute, bytes(2), by: central).map { Self.answer($0, id) } ?? "ok"
                case "command":
                    _ = await fake.write(attribute, bytes(2), withResponse: false, by: central)
                    actual = "sent"
                case "prepare":
                    let write = PreparedWrite(attribute: attribute, offset: UInt16(fields[2]) ?? 0, value: bytes(3))
                    actual =
                        await fake.prepare(write, by: central).map { Self.answer($0, id) }
                        ?? "ok " + fields[3].lowercased()
                case "execute":
                    let refused = await fake.execute(write: fields[1] == "1", by: central)
                    actual =
                        refused.map { refused in
                            let uuid = refused.attribute.flatMap { BluetoothUUID($0.text) }
                            return Self.answer(refused.code, uuid.flatMap { ids[$0] })
                        } ?? "ok"
                // The fake answers a Write Command only once its AcquireWrite is done: nothing to wait for.
                case "pause": actual = "paused"
                default: actual = "unknown operation"
                }
                #expect(
                    actual == request.answer,
                    "\(ATTRequestList.path):\(request.line): \(session) \(request.operation)")
            }
            await fake.disconnect(central)
        }

        // Requests = answers, as blemu counted them.
        let client = ControlClient(path: control)
        let line = try await blocking { try client.send(["command": "counters"]) }
        let counters =
            (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["counters"] as? [String: Any]
        let requests = counters?["requests"] as? Int ?? 0
        #expect(requests > 10 && counters?["answered"] as? Int == requests, "\(String(describing: counters))")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        await fake.stop()
        bus.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
