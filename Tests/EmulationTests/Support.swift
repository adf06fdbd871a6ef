import Emulation
import Foundation
import GATTModel
import GATTProfile
import Peripheral
import PeripheralTesting
import Synchronization

/// Loads a bundled profile from profiles/ by name.
func bundledProfile(_ name: String) throws -> PeripheralProfile {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    let result = ProfileLoader.load(path: root.appendingPathComponent("profiles/\(name).yaml").path)
    guard let profile = result.profile, !result.hasErrors else {
        throw ProfileLoadFailure(description: result.renderedDiagnostics)
    }
    return profile
}

struct ProfileLoadFailure: Error, CustomStringConvertible {
    var description: String
}

/// Collects event records and lets a test wait for the one it needs (never a sleep).
final class EventRecorder: Sendable {
    let stream: AsyncStream<EventRecord>
    private let continuation: AsyncStream<EventRecord>.Continuation
    private let all = Mutex<[EventRecord]>([])

    init() { (stream, continuation) = AsyncStream.makeStream() }

    var log: EventLog {
        EventLog { [self] record in
            self.all.withLock { $0.append(record) }
            self.continuation.yield(record)
        }
    }

    var records: [EventRecord] { all.withLock { $0 } }

    /// Waits for the next record that matches.
    func next(_ matches: (EmulationEvent) -> Bool) async -> EmulationEvent? {
        for await record in stream where matches(record.event) { return record.event }
        return nil
    }
}

/// A running emulator on the in-memory backend, with a test clock and an event recorder.
struct Rig {
    let profile: PeripheralProfile
    let clock = ManualClock()
    let recorder = EventRecorder()
    let server: ProfileServer
    let emulator: Emulator
    let manager: PeripheralManager
    let backend: InMemoryBackend

    init(
        _ profile: PeripheralProfile, configuration: PeripheralManager.Configuration = .init(), linkCapacity: Int = 4,
        stateStore: StateStore? = nil, restoring restored: RestoredState? = nil, eventLog: EventLog? = nil
    ) async throws {
        self.profile = profile
        server = ProfileServer(store: ValueStore(restored?.values ?? [:]))
        emulator = try Emulator(
            profile: profile, server: server, clock: clock, requestDeadline: configuration.requestDeadline,
            eventLog: eventLog ?? recorder.log, stateStore: stateStore)
        (manager, backend) = try await PeripheralManager.inMemory(
            publishing: profile.services, handler: emulator.handler, configuration: configuration,
            linkCapacity: linkCapacity, restoring: restored, clock: clock)
    }

    func start() async { await emulator.start(on: manager) }

    /// Subscribes and waits until the emulator has seen it.
    func subscribe(_ central: VirtualCentral, to id: String) async throws {
        try central.subscribe(to: id)
        _ = await recorder.next {
            if case .subscribed(central.central.id, id) = $0 { true } else { false }
        }
    }
}

extension Array where Element == UInt8 {
    var littleEndianInt16: Int16 { Int16(bitPattern: UInt16(self[0]) | UInt16(self[1]) << 8) }
}
