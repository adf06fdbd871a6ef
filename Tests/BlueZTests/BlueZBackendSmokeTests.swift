import BlueZ
import BlueZModel
import BlueZTesting
import DBus
import GATTModel
import Glibc
import Logging
import Peripheral
import Synchronization
import Testing

/// A minimal scripted bluetoothd: owns `org.bluez`, exports hci0 with GattManager1 (whose RegisterApplication
/// calls GetManagedObjects back, as 5.66 does) and LEAdvertisingManager1, and records what it was given.
final class ScriptedBlueZ: Sendable {
    let connection: BusConnection
    /// The application's objects as GetManagedObjects returned them, by path then interface.
    let tree = Mutex<[String: [String: [String: DBusValue]]]>([:])
    /// The application's owner and root.
    let application = Mutex<(sender: String, root: ObjectPath)?>(nil)
    /// The advertisement's properties.
    let advertisement = Mutex<[String: DBusValue]?>(nil)
    let alias = Mutex("host")

    init(address: String, logger: Logger) async throws {
        connection = try BusConnection(.address(address), logger: logger)
        try await connection.requestName("org.bluez")
        try connection.addObjectManager(at: "/")
        try connection.export(
            "/org/bluez",
            [
                Interface(
                    "org.bluez.AgentManager1",
                    methods: [
                        Method("RegisterAgent", inputs: "os", immediate: { $0.reply() }),
                        Method("RequestDefaultAgent", inputs: "o", immediate: { $0.reply() }),
                        Method("UnregisterAgent", inputs: "o", immediate: { $0.reply() }),
                    ])
            ])
        let connection = connection
        try connection.export(
            "/org/bluez/hci0",
            [
                Interface(
                    "org.bluez.Adapter1",
                    properties: [
                        Property("Powered", signature: "b", get: { .boolean(true) }),
                        Property(
                            "Alias", signature: "s", get: { .string(self.alias.withLock { $0 }) },
                            set: { value in self.alias.withLock { $0 = (try? value.asString()) ?? "" } }),
                    ]),
                Interface(
                    "org.bluez.GattManager1",
                    methods: [
                        Method.returning("RegisterApplication", inputs: "oa{sv}") { arguments, context in
                            let root = try arguments[0].asObjectPath()
                            let sender = context.sender ?? ""
                            let reply = try await connection.call(
                                sender, path: root, interface: "org.freedesktop.DBus.ObjectManager",
                                member: "GetManagedObjects")
                            var objects: [String: [String: [String: DBusValue]]] = [:]
                            for entry in try reply[0].asEntries() {
                                var interfaces: [String: [String: DBusValue]] = [:]
                                for interface in try entry.value.asEntries() {
                                    interfaces[try interface.key.asString()] = try interface.value.asVardict()
                                }
                                objects[try entry.key.asObjectPath().rawValue] = interfaces
                            }
                            // bluetoothd refuses the whole application for one unknown flag (parse_chrc_flags).
                            let known = Set(BlueZFlag.allCases.map(\.rawValue))
                            for interfaces in objects.values {
                                for properties in interfaces.values {
                                    if let flags = try properties["Flags"]?.asStrings(), !known.isSuperset(of: flags) {
                                        throw DBusError(name: "org.bluez.Error.Failed", message: "unknown flag")
                                    }
                                }
                            }
                            self.tree.withLock { $0 = objects }
                            self.application.withLock { $0 = (sender, root) }
                            return []
                        },
                        Method("UnregisterApplication", inputs: "o", immediate: { $0.reply() }),
                    ]),
                Interface(
                    "org.bluez.LEAdvertisingManager1",
                    methods: [
                        Method.returning("RegisterAdvertisement", inputs: "oa{sv}") { arguments, context in
                            let reply = try await connection.call(
                                context.sender ?? "", path: try arguments[0].asObjectPath(),
                                interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                                arguments: [.string("org.bluez.LEAdvertisement1")])
                            self.advertisement.withLock { $0 = try? reply[0].asVardict() }
                            return []
                        },
                        Method("UnregisterAdvertisement", inputs: "o", immediate: { $0.reply() }),
                    ]),
            ])
    }

    /// Calls ReadValue on an application object the way 5.66 `append_options` does.
    func readValue(_ path: ObjectPath, offset: UInt16, from caller: BusConnection? = nil) async throws -> [UInt8] {
        let sender = self.application.withLock { $0?.sender } ?? ""
        var options: [String: DBusValue] = [
            "device": .objectPath("/org/bluez/hci0/dev_11_22_33_44_55_66"), "mtu": .uint16(185), "link": .string("LE"),
        ]
        if offset != 0 { options["offset"] = .uint16(offset) }
        let reply = try await (caller ?? connection).call(
            sender, path: path, interface: "org.bluez.GattCharacteristic1",
            member: "ReadValue", arguments: [.vardict(options)])
        return try reply[0].asBytes()
    }
}

@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"))
struct BlueZBackendSmokeTests {
    static let greeting = Characteristic(
        id: "greeting", uuid: BluetoothUUID(0x2A00 + 0x99), properties: [.read, .notify],
        value: .dynamic(Array("hello".utf8)))
    static let secret = Characteristic(
        id: "secret", uuid: BluetoothUUID("12345678-1234-5678-1234-56789abcdef0")!, properties: [.write],
        permissions: [.writeEncryptionRequired])
    static let service = Service(id: "demo", uuid: BluetoothUUID(0xFFF0), characteristics: [greeting, secret])

    @Test func backendRegistersTheTreeAndAnswersReadsThroughBluetoothd() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        var logger = Logger(label: "blemu.test") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let bluez = try await ScriptedBlueZ(address: bus.address, logger: logger)
        let backend = try await BlueZBackend(
            bus: .address(bus.address), options: BlueZOptions(deviceName: "Demo"), logger: logger)
        let manager = PeripheralManager(backend: backend, logger: logger)
        try await manager.waitUntilPoweredOn()
        try await manager.publish(Self.service)
        try await manager.startAdvertising(Advertisement(localName: "Demo", serviceUUIDs: [BluetoothUUID(0xFFF0)]))

        // The tree bluetoothd read back while RegisterApplication was pending, with exact flags.
        let paths = ObjectPaths()
        let tree = bluez.tree.withLock { $0 }
        let greeting = try #require(
            tree[paths.characteristic(0, service: 0).rawValue]?["org.bluez.GattCharacteristic1"])
        #expect(try greeting["Flags"]?.asStrings() == ["read", "notify"])
        #expect(greeting["NotifyAcquired"] == .boolean(false))
        #expect(greeting["Service"] == .objectPath(paths.service(0)))
        let secret = try #require(tree[paths.characteristic(1, service: 0).rawValue]?["org.bluez.GattCharacteristic1"])
        #expect(try secret["Flags"]?.asStrings() == ["write", "encrypt-write"])
        #expect(
            tree[paths.service(0).rawValue]?["org.bluez.GattService1"]?["UUID"]
                == .string(BluetoothUUID(0xFFF0).fullString))
        #expect(bluez.advertisement.withLock { $0?["LocalName"] } == .string("Demo"))
        #expect(bluez.alias.withLock { $0 } == "Demo")

        // Read Blob at offset 2 gets the sliced value; a refused read gets BlueZErrorReply's error name.
        #expect(try await bluez.readValue(paths.characteristic(0, service: 0), offset: 2) == Array("llo".utf8))
        let refused = BlueZErrorReply(for: .readNotPermitted, operation: .read).name
        do {
            _ = try await bluez.readValue(paths.characteristic(1, service: 0), offset: 0)
            Issue.record("a read of a write-only characteristic was answered")
        } catch let error as DBusError {
            #expect(error.name == refused)
        }

        // AcquireNotify (5.66: once per characteristic): every update is one datagram on the returned socket.
        let acquired = try await bluez.connection.call(
            bluez.application.withLock { $0?.sender } ?? "",
            path: paths.characteristic(0, service: 0),
            interface: "org.bluez.GattCharacteristic1", member: "AcquireNotify",
            arguments: [
                .vardict(["device": .objectPath("/org/bluez/hci0/dev_11_22_33_44_55_66"), "mtu": .uint16(185)])
            ])
        let fd = try acquired[0].asUnixFD().rawValue
        defer { _ = Glibc.close(fd) }
        #expect(acquired[1] == .uint16(185))
        while await manager.subscribedCentrals(of: Self.greeting).isEmpty { await Task.yield() }
        #expect(await manager.subscribedCentrals(of: Self.greeting).map(\.id) == [Central.allSubscribersID])
        #expect(await manager.updateValue(Array("news".utf8), for: Self.greeting))
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        #expect(count == 4 && Array(buffer.prefix(4)) == Array("news".utf8))

        // Anyone but the owner of org.bluez is refused.
        let intruder = try BusConnection(.address(bus.address), logger: logger)
        do {
            _ = try await bluez.readValue(paths.characteristic(0, service: 0), offset: 0, from: intruder)
            Issue.record("an intruder's ReadValue was answered")
        } catch let error as DBusError {
            #expect(error.name == "org.freedesktop.DBus.Error.AccessDenied")
        }
        intruder.close()

        await backend.shutdown()
        #expect(bluez.alias.withLock { $0 } == "host")
        #expect(manager.requestCounts.requests >= 2)
        bluez.connection.close()
    }
}
