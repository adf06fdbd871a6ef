import DBus
import Glibc
import Logging
import Synchronization

/// A stand-in for bluetoothd 5.66 on a private bus: owns `org.bluez`, exports `/org/bluez/hci0` with GattManager1,
/// LEAdvertisingManager1 and Adapter1, and `/org/bluez` with AgentManager1, and answers registrations the way
/// bluetoothd does (docs/bluez.md): `RegisterApplication` calls `GetManagedObjects` back before it answers, and
/// `RegisterAdvertisement` reads the advertisement's properties back. It records when each registration completed,
/// by its own clock, and where each application's characteristics are, so the workloads can drive them.
final class FakeBluetoothd: Sendable {
    static let service = "org.bluez"
    static let adapterPath: ObjectPath = "/org/bluez/hci0"
    static let device: ObjectPath = "/org/bluez/hci0/dev_00_11_22_33_44_55"

    /// One application as bluetoothd saw it: who registered it, when, and its characteristics by UUID.
    struct Application: Sendable {
        var sender: String
        var root: ObjectPath
        var characteristics: [String: ObjectPath] = [:]
        var characteristicCount = 0
        var notifyAcquired: Set<String> = []
        var registeredAt: UInt64 = 0
        var registrations = 0
    }

    struct Registrations: Sendable {
        var applications: [String: Application] = [:]
        var advertisedAt: [String: UInt64] = [:]
        var agents: Set<String> = []
        var failures: [String: String] = [:]
    }

    let connection: BusConnection
    let registrations = Mutex(Registrations())
    let alias = Mutex("fake-bluetoothd")

    init(address: String) async throws {
        var logger = Logger(label: "fake-bluetoothd")
        logger.logLevel = .warning
        connection = try BusConnection(.address(address), logger: logger)
        try connection.addObjectManager(at: "/")
        try connection.export("/org/bluez", [agentManager()])
        try connection.export(Self.adapterPath, [adapter(), gattManager(), advertisingManager()])
        try await connection.requestName(Self.service)
    }

    func close() { connection.close() }

    /// The application `sender` registered, once it has completed a registration.
    func application(of sender: String) -> Application? {
        registrations.withLock { $0.applications[sender] }
    }

    func advertisedAt(_ sender: String) -> UInt64? { registrations.withLock { $0.advertisedAt[sender] } }
    func failure(_ sender: String) -> String? { registrations.withLock { $0.failures[sender] } }

    /// Every sender that has registered an application, with its registration: to find a new contender's name.
    func applications() -> [Application] { registrations.withLock { Array($0.applications.values) } }

    // MARK: Interfaces

    private func adapter() -> Interface {
        @Sendable func fixed(
            _ name: String, _ signature: Signature, _ value: DBusValue, writable: Bool = false
        ) -> Property {
            Property(name, signature: signature, get: { value }, set: writable ? { @Sendable _ in } : nil)
        }
        return Interface(
            "org.bluez.Adapter1",
            methods: [
                Method("StartDiscovery") { call in call.reply() },
                Method("StopDiscovery") { call in call.reply() },
                Method("RemoveDevice", inputs: "o") { call in call.reply() },
            ],
            properties: [
                fixed("Address", "s", .string("00:AA:BB:CC:DD:EE")),
                fixed("AddressType", "s", .string("public")),
                fixed("Name", "s", .string("fake-bluetoothd")),
                Property(
                    "Alias", signature: "s", get: { [weak self] in .string(self?.alias.withLock { $0 } ?? "") },
                    set: { [weak self] value in if case .string(let text) = value { self?.alias.withLock { $0 = text } }
                    }),
                fixed("Class", "u", .uint32(0)),
                fixed("Powered", "b", .boolean(true), writable: true),
                fixed("Discoverable", "b", .boolean(true), writable: true),
                fixed("DiscoverableTimeout", "u", .uint32(0), writable: true),
                fixed("Pairable", "b", .boolean(true), writable: true),
                fixed("PairableTimeout", "u", .uint32(0), writable: true),
                fixed("Discovering", "b", .boolean(false)),
                fixed("UUIDs", "as", .strings(["00001801-0000-1000-8000-00805f9b34fb"])),
                fixed("Modalias", "s", .string("usb:v1D6Bp0246d0542")),
                fixed("Roles", "as", .strings(["central", "peripheral"])),
            ])
    }

    private func agentManager() -> Interface {
        return Interface(
            "org.bluez.AgentManager1",
            methods: [
                Method("RegisterAgent", inputs: "os") { [weak self] (call: consuming MethodCall) in
                    let sender = call.sender ?? ""
                    self?.registrations.withLock { _ = $0.agents.insert(sender) }
                    call.reply()
                },
                Method("UnregisterAgent", inputs: "o") { call in call.reply() },
                Method("RequestDefaultAgent", inputs: "o") { call in call.reply() },
            ])
    }

    private func gattManager() -> Interface {
        Interface(
            "org.bluez.GattManager1",
            methods: [
                Method("RegisterApplication", inputs: "oa{sv}") { [weak self] (call: consuming MethodCall) async in
                    guard let self else { return call.fail("org.bluez.Error.Failed", "shutting down") }
                    let sender = call.sender ?? ""
                    guard case .objectPath(let root)? = call.arguments.first else {
                        return call.fail("org.bluez.Error.InvalidArguments", "no application path")
                    }
                    do {
                        let application = try await self.walk(sender: sender, root: root)
                        self.registrations.withLock { state in
                            var application = application
                            application.registrations = (state.applications[sender]?.registrations ?? 0) + 1
                            state.applications[sender] = application
                        }
                        call.reply()
                    } catch {
                        self.registrations.withLock { $0.failures[sender] = "RegisterApplication: \(error)" }
                        call.fail("org.bluez.Error.Failed", "\(error)")
                    }
                },
                Method("UnregisterApplication", inputs: "o") { call in call.reply() },
            ])
    }

    private func advertisingManager() -> Interface {
        Interface(
            "org.bluez.LEAdvertisingManager1",
            methods: [
                Method("RegisterAdvertisement", inputs: "oa{sv}") { [weak self] (call: consuming MethodCall) async in
                    guard let self else { return call.fail("org.bluez.Error.Failed", "shutting down") }
                    let sender = call.sender ?? ""
                    guard case .objectPath(let path)? = call.arguments.first else {
                        return call.fail("org.bluez.Error.InvalidArguments", "no advertisement path")
                    }
                    do {
                        // bluetoothd reads the advertisement's properties back (src/advertising.c, parse_*).
                        let reply = try await self.connection.call(
                            sender, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                            arguments: [.string("org.bluez.LEAdvertisement1")], timeout: .seconds(10))
                        guard (try? reply.first?.asVardict())?["Type"] != nil else {
                            throw DBusError(name: "org.bluez.Error.InvalidArguments", message: "no Type property")
                        }
                        let now = monotonic()
                        self.registrations.withLock { $0.advertisedAt[sender] = now }
                        call.reply()
                    } catch {
                        self.registrations.withLock { $0.failures[sender] = "RegisterAdvertisement: \(error)" }
                        call.fail("org.bluez.Error.Failed", "\(error)")
                    }
                },
                Method("UnregisterAdvertisement", inputs: "o") { call in call.reply() },
            ],
            properties: [
                Property("ActiveInstances", signature: "y", get: { .byte(0) }),
                Property("SupportedInstances", signature: "y", get: { .byte(5) }),
                Property(
                    "SupportedIncludes", signature: "as", get: { .strings(["tx-power", "appearance", "local-name"]) }),
                Property("SupportedSecondaryChannels", signature: "as", get: { .strings(["1M", "2M", "Coded"]) }),
            ])
    }

    /// `GetManagedObjects` on the application root, as bluetoothd's gatt-database.c does before answering
    /// RegisterApplication: every characteristic found is recorded by UUID (lower case).
    private func walk(sender: String, root: ObjectPath) async throws -> Application {
        let reply = try await connection.call(
            sender, path: root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects",
            timeout: .seconds(20))
        var application = Application(sender: sender, root: root)
        guard let objects = try reply.first?.asEntries() else { throw BenchError("GetManagedObjects: empty reply") }
        var services = 0
        for object in objects {
            guard case .objectPath(let path) = object.key else { continue }
            for entry in try object.value.asEntries() {
                guard case .string(let interface) = entry.key else { continue }
                if interface == "org.bluez.GattService1" { services += 1 }
                guard interface == "org.bluez.GattCharacteristic1" else { continue }
                let properties = try entry.value.asVardict()
                guard case .string(let uuid)? = properties["UUID"] else {
                    throw BenchError("\(path): a characteristic without UUID")
                }
                guard case .array(_, let flags)? = properties["Flags"], !flags.isEmpty else {
                    throw BenchError("\(path): a characteristic without Flags")
                }
                application.characteristics[uuid.lowercased()] = path
                application.characteristicCount += 1
                if properties["NotifyAcquired"] != nil { application.notifyAcquired.insert(uuid.lowercased()) }
            }
        }
        guard services > 0 else { throw BenchError("no GattService1 under \(root)") }
        application.registeredAt = monotonic()
        return application
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
