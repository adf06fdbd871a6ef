import BlueZTesting
import DBus
import Glibc
import Synchronization
import Testing

/// An actor pinned to a connection's loop thread (`BusConnection.unownedExecutor`), as BlueZBackend is.
actor LoopPinned {
    nonisolated let connection: BusConnection
    private(set) var entries: [String] = []

    init(_ connection: BusConnection) { self.connection = connection }

    nonisolated var unownedExecutor: UnownedSerialExecutor { connection.unownedExecutor }

    /// Where the actor's jobs run.
    func thread() -> UInt { UInt(pthread_self()) }

    func note(_ entry: String) { entries.append(entry) }

    /// Awaits a bus call, then notes it: the continuation comes back to this actor, on the loop.
    func noteAfterCall(_ entry: String) async throws -> UInt {
        _ = try await connection.nameOwner("org.freedesktop.DBus")
        entries.append(entry)
        return UInt(pthread_self())
    }
}

@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .timeLimit(.minutes(1)))
struct BusExecutorTests {
    @Test func anActorPinnedToTheConnectionRunsWhereItsHandlersRun() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let pinned = LoopPinned(pair.server)
        let handlerThread = Mutex<UInt?>(nil)
        try pair.server.export(
            "/pinned",
            [
                Interface(
                    "org.example.Pinned1",
                    methods: [
                        Method("Note", inputs: "s") { call in
                            handlerThread.withLock { $0 = UInt(pthread_self()) }
                            let entry = (try? call.arguments[0].asString()) ?? ""
                            // A handler is no Swift job, yet it is on the actor's executor: no hop, no lock.
                            pinned.assumeIsolated { $0.note(entry) }
                            call.reply()
                        }
                    ])
            ])
        _ = try await pair.client.call(
            pair.server.uniqueName, path: "/pinned", interface: "org.example.Pinned1", member: "Note",
            arguments: [.string("from a handler")])
        let jobThread = await pinned.thread()
        #expect(jobThread == handlerThread.withLock { $0 })
        #expect(try await pinned.noteAfterCall("after a call") == jobThread)
        #expect(await pinned.entries == ["from a handler", "after a call"])
    }

    @Test func jobsRunInOrderAndKeepRunningAfterTheConnectionCloses() async throws {
        let pair = try BusPair()
        let pinned = LoopPinned(pair.server)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask { await pinned.note("\(index)") }
            }
        }
        #expect(await pinned.entries.count == 50)
        pair.close()
        // With no loop left, the actor still runs (its shutdown, late calls), one job at a time.
        await withTaskGroup(of: Void.self) { group in
            for index in 50..<100 {
                group.addTask { await pinned.note("\(index)") }
            }
        }
        #expect(Set(await pinned.entries) == Set((0..<100).map { "\($0)" }))
        await #expect(throws: DBusError.self) { _ = try await pinned.noteAfterCall("closed") }
    }
}
