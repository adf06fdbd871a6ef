import BlueZTesting
import DBus
import Foundation
import Synchronization
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Signals, name owners, and what happens to calls and streams when the connection or the bus goes away.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs the dbus-daemon binary"))
struct BusSignalTests {
    @Test func subscribedSignalsArriveAndOthersDoNot() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let alarms = try await client.signals(matching: MatchRule(interface: sensorInterface, member: "Alarm"))
        try server.emitSignal(
            path: "/app/sensor0", interface: sensorInterface, member: "Other", arguments: [.string("no")])
        try server.emitSignal(
            path: "/app/sensor0", interface: sensorInterface, member: "Alarm", arguments: [.string("hot")])
        let signal = try #require(await first(of: alarms))
        #expect(signal.member == "Alarm")
        #expect(signal.arguments == [.string("hot")])
        #expect(signal.sender == server.uniqueName)
    }

    @Test func aCancelledSubscriptionStopsDeliveringSignals() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let (alarms, alarmContinuation) = AsyncStream<String>.makeStream()
        let count = Counter()
        let subscription = try await client.subscribe(MatchRule(interface: sensorInterface, member: "Alarm")) {
            signal in
            count.increment()
            alarmContinuation.yield((try? signal.arguments[0].asString()) ?? "")
        }
        try server.emitSignal(
            path: "/app/sensor0", interface: sensorInterface, member: "Alarm", arguments: [.string("one")])
        #expect(await first(of: alarms) == "one")
        subscription.cancel()
        try server.emitSignal(
            path: "/app/sensor0", interface: sensorInterface, member: "Alarm", arguments: [.string("two")])
        // The server sends its signal before it answers this call, and the bus keeps one sender's order: once
        // the reply is here, the signal has been delivered or dropped.
        _ = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "Echo",
            arguments: [.string("")])
        #expect(count.value == 1)
    }

    @Test func nameOwnerChangesFollowAnOwnerComingAndGoing() async throws {
        let bus = try PrivateBus()
        let watcher = try bus.connect("watcher")
        defer { watcher.close() }
        let owners = try await watcher.nameOwnerChanges(of: "org.example.Daemon")
        let daemon = try bus.connect("daemon")
        try await daemon.requestName("org.example.Daemon")
        let daemonName = daemon.uniqueName
        daemon.close()
        let seen = await collect(3, of: owners)
        #expect(seen == [nil, daemonName, nil])
    }

    @Test func callsOnAClosedConnectionFailWithDisconnected() async throws {
        let bus = try PrivateBus()
        let client = try bus.connect("client")
        client.close()
        #expect(client.isClosed)
        await #expect(throws: DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "connection closed"))
        {
            try await client.nameOwner("org.example.Anyone")
        }
    }

    @Test func losingTheBusFailsPendingCallsWithDisconnectedAndEndsStreams() async throws {
        let bus = try PrivateBus()
        let client = try bus.connect("client")
        defer { client.close() }
        let server = try bus.connect("server")
        defer { server.close() }
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let parking = Parking()
        try server.export(
            "/hang",
            [
                Interface(
                    "org.example.Hang",
                    methods: [
                        Method(
                            "Wait",
                            task: { call in
                                // Kept, never answered, until the bus dies: a call can be stored and moved.
                                await parking.park(call)
                                startedContinuation.yield()
                            })
                    ])
            ])
        let signals = try await client.signals(matching: MatchRule(interface: "org.example.Never"))
        let pending = Task {
            try await client.call(server.uniqueName, path: "/hang", interface: "org.example.Hang", member: "Wait")
        }
        _ = await first(of: started)
        bus.stop()
        await #expect(throws: DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "connection closed"))
        {
            _ = try await pending.value
        }
        #expect(await first(of: signals) == nil)
        #expect(await parking.hasCall)
        #expect(client.isClosed)
    }

    @Test func exportingAnInvalidTreeIsAnError() throws {
        let bus = try PrivateBus()
        let server = try bus.connect("server")
        defer { server.close() }
        #expect(throws: ExportError.self) { try server.export("bad", []) }
        #expect(throws: ExportError.self) { try server.export("/x", [Interface("not an interface")]) }
        #expect(throws: ExportError.self) {
            try server.export("/x", [Interface("a.B", methods: [Method("M", inputs: "a{") { call in call.reply() }])])
        }
        try server.export("/x", [Interface("a.B")])
        #expect(throws: ExportError.self) { try server.export("/x", [Interface("a.B")]) }
    }
}
