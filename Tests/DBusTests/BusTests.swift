import BlueZTesting
import DBus
import Foundation
import Synchronization
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

@Suite(.enabled(if: PrivateBus.isAvailable, "needs the dbus-daemon binary"))
struct BusTests {
    @Test func anExportedMethodAnswersACallFromAnotherConnection() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let echoed = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "Echo",
            arguments: [.string("hi")])
        #expect(echoed == [.string("hi")])
        let sum = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "Add",
            arguments: [.int32(40), .int32(2)])
        #expect(sum == [.int32(42)])
    }

    @Test func aReplyThatIsNotTheDeclaredOutputsAnswersFailedNamingBoth() async throws {
        let bus = try PrivateBus()
        let server = try bus.connect("server")
        let client = try bus.connect("client")
        defer {
            client.close()
            server.close()
        }
        try server.export(
            "/app",
            [
                Interface(
                    "org.example.Replies",
                    methods: [
                        Method("One", outputs: "s") { call in call.reply([.int32(1)]) },
                        Method("Two", outputs: "su") { call in call.reply([.string("a"), .string("b")]) },
                        Method("Right", outputs: "su") { call in call.reply([.string("a"), .uint32(2)]) },
                        // Containers: their signatures come from their element types, not from their contents.
                        Method("Containers", outputs: "a{sv}ayas(is)aai") { call in
                            call.reply([
                                .vardict(["k": .bytes([1])]), .bytes([]), .strings([]),
                                .structure([.int32(1), .string("s")]),
                                .array(element: "ai", [.array(element: "i", [])]),
                            ])
                        },
                        Method("WrongContainer", outputs: "as") { call in call.reply([.array(element: "i", [])]) },
                    ])
            ])
        func answer(_ member: String) async -> String {
            do {
                let values = try await client.call(
                    server.uniqueName, path: "/app", interface: "org.example.Replies", member: member)
                return "\(values)"
            } catch let error as DBusError {
                return "\(error.name): \(error.message)"
            } catch {
                return "\(error)"
            }
        }
        let failed = "org.freedesktop.DBus.Error.Failed: invalid reply: "
        #expect(await answer("One") == failed + "\(MarshalError.typeMismatch(expected: "s", actual: "i"))")
        #expect(await answer("Two") == failed + "\(MarshalError.typeMismatch(expected: "su", actual: "ss"))")
        #expect(await answer("Right") == "\([DBusValue.string("a"), .uint32(2)])")
        #expect(!(await answer("Containers")).hasPrefix("org.freedesktop.DBus.Error"))
        #expect(await answer("WrongContainer") == failed + "\(MarshalError.typeMismatch(expected: "as", actual: "ai"))")
    }

    @Test func theHandlerSeesTheCallersUniqueName() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let reply = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "WhoAmI")
        #expect(reply == [.string(client.uniqueName)])
        #expect(client.uniqueName.hasPrefix(":"))
        // Callers taking turns each see their own name (the server reuses the last caller's string when it is the
        // same caller: `CallNames`).
        let second = try pair.bus.connect("second")
        defer { second.close() }
        var seen: [DBusValue] = []
        for caller in [client, client, second, client, second, second] {
            seen += try await caller.call(
                server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "WhoAmI")
        }
        let names = [client, client, second, client, second, second].map { DBusValue.string($0.uniqueName) }
        #expect(seen == names)
        #expect(client.uniqueName != second.uniqueName)
    }

    @Test func aWellKnownNameCanBeRequestedAndCalled() async throws {
        let bus = try PrivateBus()
        let server = try bus.connect("server")
        let other = try bus.connect("other")
        defer { other.close(); server.close() }
        try exportSensor(on: server, state: Level(0))
        try await server.requestName("org.example.Sensor")
        await #expect(throws: DBusError.self) { try await other.requestName("org.example.Sensor") }
        let reply = try await other.call(
            "org.example.Sensor", path: "/app/sensor0", interface: sensorInterface, member: "Echo",
            arguments: [.string("x")])
        #expect(reply == [.string("x")])
        #expect(try await other.nameOwner("org.example.Sensor") == server.uniqueName)
    }

    @Test func introspectionIsValidXMLListingInterfacesMembersAndChildren() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let reply = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: "org.freedesktop.DBus.Introspectable",
            member: "Introspect")
        let xml = try #require(try reply.first?.asString())
        #expect(xml.contains("<interface name=\"org.example.Sensor1\">"))
        #expect(xml.contains("<method name=\"Add\"><arg name=\"arg0\" type=\"i\" direction=\"in\"/>"))
        #expect(xml.contains("<property name=\"Level\" type=\"i\" access=\"readwrite\"/>"))
        #expect(xml.contains("<property name=\"Name\" type=\"s\" access=\"read\"/>"))
        #expect(xml.contains("<signal name=\"Alarm\">"))
        #if canImport(FoundationXML) || canImport(Darwin)
        let parser = XMLParser(data: Data(xml.utf8))
        #expect(parser.parse(), "introspection XML must parse: \(xml)")
        #endif
        let root = try await client.call(
            server.uniqueName, path: "/", interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        #expect(try root[0].asString().contains("<node name=\"app\"/>"))
        let app = try await client.call(
            server.uniqueName, path: "/app", interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        #expect(try app[0].asString().contains("<node name=\"sensor0\"/>"))
        #expect(try app[0].asString().contains("org.freedesktop.DBus.ObjectManager"))
    }

    @Test func getManagedObjectsListsTheSubtreeWithAllProperties() async throws {
        let pair = try BusPair(sensorLevel: 7)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        try server.export("/elsewhere", [Interface("org.example.Other")])
        let reply = try await client.call(
            server.uniqueName, path: "/app", interface: "org.freedesktop.DBus.ObjectManager",
            member: "GetManagedObjects")
        let objects = try reply[0].asEntries()
        #expect(objects.map(\.key) == [.objectPath("/app/sensor0")])
        let interfaces = try objects[0].value.asEntries()
        #expect(interfaces.map(\.key) == [.string(sensorInterface)])
        let properties = try interfaces[0].value.asVardict()
        #expect(properties == ["Name": .string("thermo"), "Level": .int32(7)])
    }

    @Test func exportingAndUnexportingEmitsInterfacesAddedAndRemoved() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        // A round trip first: the server sends what it queued (InterfacesAdded for sensor0) before answering.
        _ = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "Echo",
            arguments: [.string("")])
        let signals = try await client.signals(
            matching: MatchRule(sender: server.uniqueName, interface: "org.freedesktop.DBus.ObjectManager"))
        try server.export(
            "/app/sensor1",
            [Interface("org.example.Probe1", properties: [Property("Id", signature: "q", get: { .uint16(1) })])])
        server.unexport("/app/sensor1")
        let received = await collect(2, of: signals)
        try #require(received.count == 2)
        #expect(received[0].member == "InterfacesAdded")
        #expect(received[0].path == "/app")
        #expect(received[0].arguments[0] == .objectPath("/app/sensor1"))
        #expect(try received[0].arguments[1].asEntries()[0].value.asVardict() == ["Id": .uint16(1)])
        #expect(received[1].member == "InterfacesRemoved")
        #expect(received[1].arguments == [.objectPath("/app/sensor1"), .strings(["org.example.Probe1"])])
    }

    @Test func aRepeatedCallIsRoutedByTheTreeAsItIsNow() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        func echo(_ path: ObjectPath) async -> String {
            do {
                let reply = try await client.call(
                    server.uniqueName, path: path, interface: sensorInterface, member: "Echo", arguments: [.string("a")]
                )
                return try reply[0].asString()
            } catch let error as DBusError {
                return error.name
            } catch {
                return "\(error)"
            }
        }
        // The same call twice: the second takes the first's route.
        #expect(await echo("/app/sensor0") == "a")
        #expect(await echo("/app/sensor0") == "a")
        // The object gone, the same call finds no object; back with another method, the call reaches that one.
        server.unexport("/app/sensor0")
        #expect(await echo("/app/sensor0") == "org.freedesktop.DBus.Error.UnknownObject")
        try server.export(
            "/app/sensor0",
            [
                Interface(
                    sensorInterface,
                    methods: [Method("Echo", inputs: "s", outputs: "s") { call in call.reply([.string("again")]) }])
            ])
        #expect(await echo("/app/sensor0") == "again")
        // The same holds for ObjectManager roots: GetManagedObjects is refused, then answered, then refused again.
        func managedObjects() async -> String {
            do {
                let reply = try await client.call(
                    server.uniqueName, path: "/app/sensor0", interface: "org.freedesktop.DBus.ObjectManager",
                    member: "GetManagedObjects")
                return "\(try reply[0].asEntries().count) objects"
            } catch let error as DBusError {
                return error.name
            } catch {
                return "\(error)"
            }
        }
        #expect(await managedObjects() == "org.freedesktop.DBus.Error.UnknownInterface")
        try server.addObjectManager(at: "/app/sensor0")
        #expect(await managedObjects() == "0 objects")
        server.removeObjectManager(at: "/app/sensor0")
        #expect(await managedObjects() == "org.freedesktop.DBus.Error.UnknownInterface")
    }

    @Test func propertiesCanBeReadWrittenAndAnnounceTheirChanges() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let state = Level(1)
        try exportSensor(on: server, state: state)
        let properties = "org.freedesktop.DBus.Properties"
        let get = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: properties, member: "Get",
            arguments: [.string(sensorInterface), .string("Level")])
        #expect(get == [.variant(.int32(1))])
        let changes = try await client.signals(
            matching: MatchRule(path: "/app/sensor0", interface: properties, member: "PropertiesChanged"))
        _ = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: properties, member: "Set",
            arguments: [.string(sensorInterface), .string("Level"), .variant(.int32(5))])
        #expect(state.value.withLock { $0 } == 5)
        let all = try await client.call(
            server.uniqueName, path: "/app/sensor0", interface: properties, member: "GetAll",
            arguments: [.string(sensorInterface)])
        #expect(try all[0].asVardict() == ["Name": .string("thermo"), "Level": .int32(5)])
        state.value.withLock { $0 = 9 }
        try server.emitPropertiesChanged(path: "/app/sensor0", interface: sensorInterface, properties: ["Level"])
        let received = await collect(2, of: changes)
        try #require(received.count == 2)
        #expect(received[0].arguments == [.string(sensorInterface), .vardict(["Level": .int32(5)]), .strings([])])
        #expect(received[1].arguments == [.string(sensorInterface), .vardict(["Level": .int32(9)]), .strings([])])
    }

    @Test func mistakesGetTheStandardErrorNames() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        func errorName(
            _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
        ) async -> String? {
            do {
                _ = try await client.call(
                    server.uniqueName, path: path, interface: interface, member: member, arguments: arguments)
                return nil
            } catch let error as DBusError {
                return error.name
            } catch {
                return "\(error)"
            }
        }
        let properties = "org.freedesktop.DBus.Properties"
        #expect(await errorName("/nowhere", sensorInterface, "Echo") == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(
            await errorName("/app/sensor0", "org.example.Nope", "Echo") == "org.freedesktop.DBus.Error.UnknownInterface"
        )
        #expect(await errorName("/app/sensor0", sensorInterface, "Nope") == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(
            await errorName("/app/sensor0", sensorInterface, "Echo", [.int32(1)])
                == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(
            await errorName("/app/sensor0", properties, "Get", [.string(sensorInterface), .string("Nope")])
                == "org.freedesktop.DBus.Error.UnknownProperty")
        #expect(
            await errorName(
                "/app/sensor0", properties, "Set", [.string(sensorInterface), .string("Name"), .variant(.string("x"))])
                == "org.freedesktop.DBus.Error.PropertyReadOnly")
        #expect(
            await errorName(
                "/app/sensor0", properties, "Set", [.string(sensorInterface), .string("Level"), .variant(.string("x"))])
                == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(await errorName("/app/sensor0", sensorInterface, "Refuse") == "org.example.Error.NotPermitted")
        #expect(await errorName("/app/sensor0", sensorInterface, "Crash") == "org.freedesktop.DBus.Error.Failed")
        #expect(
            await errorName("/app/sensor0", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
                == "org.freedesktop.DBus.Error.UnknownInterface")
    }

    @Test func aDroppedCallIsAnsweredFailedAndCounted() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        await #expect(
            throws: DBusError(
                name: "org.freedesktop.DBus.Error.Failed", message: "the handler dropped the call without answering")
        ) {
            try await client.call(server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "Drop")
        }
        let stats = server.statistics
        #expect(stats.droppedCalls == 1)
        #expect(stats.callsReceived == 1)
        #expect(stats.callsAnswered == 1)
        #expect(stats.repliesSent == 1)
    }

    @Test func aNoReplyCallIsConsumedButGetsNoReply() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let (handled, handledContinuation) = AsyncStream<Bool>.makeStream()
        try server.export(
            "/w",
            [
                Interface(
                    "org.example.Writer",
                    methods: [
                        Method("Write", inputs: "ay") { call in
                            let expectsReply = call.expectsReply
                            call.reply()
                            handledContinuation.yield(expectsReply)
                        }
                    ])
            ])
        try client.callWithoutReply(
            server.uniqueName, path: "/w", interface: "org.example.Writer", member: "Write", arguments: [.bytes([1])])
        #expect(await first(of: handled) == false)
        let stats = server.statistics
        #expect(stats.callsReceived == 1)
        #expect(stats.callsAnswered == 1)
        #expect(stats.repliesSent == 0)
        #expect(client.statistics.repliesReceived == 0)
    }

    @Test func fileDescriptorsPassBothWays() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        #expect(server.canPassFileDescriptors)
        // Swap(h) -> h: writes "ping" into the fd it gets and returns the read end of a pipe holding "pong".
        try server.export(
            "/fd",
            [
                Interface(
                    "org.example.Fd",
                    methods: [
                        Method("Swap", inputs: "h", outputs: "h") { call in
                            guard let received = try? call.arguments[0].asUnixFD() else {
                                return call.fail("x.Bad", "no fd")
                            }
                            _ = Array("ping".utf8).withUnsafeBytes { write(received.rawValue, $0.baseAddress, 4) }
                            close(received.rawValue)
                            var ends: [Int32] = [-1, -1]
                            _ = pipe(&ends)
                            _ = Array("pong".utf8).withUnsafeBytes { write(ends[1], $0.baseAddress, 4) }
                            close(ends[1])
                            call.reply([.unixFD(UnixFD(ends[0]))])
                            close(ends[0])  // the reply holds its own duplicate
                        }
                    ])
            ])
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let reply = try await client.call(
            server.uniqueName, path: "/fd", interface: "org.example.Fd", member: "Swap",
            arguments: [.unixFD(UnixFD(ends[1]))])
        close(ends[1])
        var buffer = [UInt8](repeating: 0, count: 4)
        #expect(read(ends[0], &buffer, 4) == 4)
        #expect(String(decoding: buffer, as: UTF8.self) == "ping")
        close(ends[0])
        let returned = try reply[0].asUnixFD()
        #expect(read(returned.rawValue, &buffer, 4) == 4)
        #expect(String(decoding: buffer, as: UTF8.self) == "pong")
        close(returned.rawValue)
    }

    @Test func aCallbackArrivingWhileOurCallIsPendingIsServed() async throws {
        // The RegisterApplication pattern: A calls B.Register; before answering, B calls A.GetManagedObjects.
        let bus = try PrivateBus()
        let app = try bus.connect("app")
        let daemon = try bus.connect("daemon")
        defer { app.close(); daemon.close() }
        try exportSensor(on: app, state: Level(3))
        try daemon.export(
            "/daemon",
            [
                Interface(
                    "org.example.Manager1",
                    methods: [
                        .returning("Register", inputs: "o", outputs: "u") { [daemon] arguments, context in
                            let root = try arguments[0].asObjectPath()
                            let objects = try await daemon.call(
                                context.sender ?? "", path: root, interface: "org.freedesktop.DBus.ObjectManager",
                                member: "GetManagedObjects")
                            return [.uint32(UInt32(try objects[0].asEntries().count))]
                        }
                    ])
            ])
        // A deadlock never answers, however long the wait: the timeout only has to outlast a starved machine (the
        // handler runs on the cooperative pool, which the lab's VMs in the same test run can hold for seconds).
        let reply = try await app.call(
            daemon.uniqueName, path: "/daemon", interface: "org.example.Manager1", member: "Register",
            arguments: [.objectPath("/app")], timeout: .seconds(30))
        #expect(reply == [.uint32(1)])
        #expect(app.statistics.callsReceived == 1)
        #expect(app.statistics.repliesSent == 1)
    }

    @Test func aCallAnsweredLaterFromATaskGetsItsReply() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let (release, releaseContinuation) = AsyncStream<String>.makeStream()
        try server.export(
            "/later",
            [
                Interface(
                    "org.example.Later",
                    methods: [
                        Method(
                            "Wait", outputs: "s",
                            task: { call in
                                let word = await first(of: release) ?? "timeout"
                                call.reply([.string(word)])
                            })
                    ])
            ])
        async let reply = client.call(server.uniqueName, path: "/later", interface: "org.example.Later", member: "Wait")
        releaseContinuation.yield("done")
        #expect(try await reply == [.string("done")])
    }

    @Test func aCallWithoutAnAnswerTimesOutWithNoReply() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
        try server.export(
            "/slow",
            [
                Interface(
                    "org.example.Slow",
                    methods: [
                        Method(
                            "Wait",
                            task: { call in
                                _ = await first(of: release)
                                call.reply()
                            })
                    ])
            ])
        await #expect(throws: DBusError.self) {
            do {
                _ = try await client.call(
                    server.uniqueName, path: "/slow", interface: "org.example.Slow", member: "Wait",
                    timeout: .milliseconds(100))
            } catch let error as DBusError {
                #expect(error.name == "org.freedesktop.DBus.Error.NoReply")
                throw error
            }
        }
        releaseContinuation.yield()
        // The late reply is ignored, and the connection still works.
        let echo = try await client.call(
            "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus.Peer",
            member: "Ping")
        #expect(echo.isEmpty)
    }

    @Test func manyConcurrentCallsGetExactlyOneReplyEach() async throws {
        let pair = try BusPair(sensorLevel: 0)
        defer { pair.close() }
        let (server, client) = (pair.server, pair.client)
        let total = 1000
        let inFlight = 16
        let correct = try await withThrowingTaskGroup(of: Bool.self) { group in
            var next = 0
            var correct = 0
            func launch(_ index: Int) {
                group.addTask {
                    let reply = try await client.call(
                        server.uniqueName, path: "/app/sensor0", interface: sensorInterface, member: "Echo",
                        arguments: [.string("n\(index)")])
                    return reply == [.string("n\(index)")]
                }
            }
            while next < inFlight { launch(next); next += 1 }
            while let ok = try await group.next() {
                if ok { correct += 1 }
                if next < total { launch(next); next += 1 }
            }
            return correct
        }
        #expect(correct == total)
        let stats = server.statistics
        #expect(stats.callsReceived == total)
        #expect(stats.callsAnswered == total)
        #expect(stats.repliesSent == total)
        #expect(client.statistics.callsSent == total)
        #expect(client.statistics.repliesReceived == total)
    }
}
