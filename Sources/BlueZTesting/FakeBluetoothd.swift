// A fake bluetoothd, for bus-level tests of a peripheral app (one built on blemu's BlueZ module, or any app that
// registers with org.bluez over D-Bus): it owns org.bluez on a private bus (PrivateBus) and talks to the app as
// bluetoothd 5.66 to 5.87 does where blemu depends on it; where those versions differ, as 5.66 does
// (src/gatt-database.c, src/advertising.c, src/agent.c, src/adapter.c), and as 5.83+ does only on request
// (`saysWhyLinksGoDown()`). Simulated centrals connect, read, write and subscribe through it; blemu's own level 5
// tests run on it (docs/architecture.md, "Test levels"). Where the fake and real bluetoothd disagree (the lab runs
// 5.66, 5.82 and 5.87), the fake is wrong: each behaviour cites the 5.66 function it mirrors.
import DBus
import Foundation
import GATTModel
import Logging
import Synchronization
import Waiting

/// A fake bluetoothd: plays org.bluez on a bus (a `PrivateBus`, usually) with one adapter (`/org/bluez/hci0`), its
/// agent, GATT and advertising managers, and simulated centrals (`connect(address:)`, then `read`, `write`,
/// `subscribe`...; see FakeBluetoothd+Central.swift). Counters and the registered state say what the app did.
/// `stop()` closes its connection.
public actor FakeBluetoothd {
    /// The adapter's fixed address.
    public static let adapterAddress = "00:AA:01:00:00:00"

    let busAddress: String
    let logger: Logger
    /// How many advertisements the controller can hold (5.66 reads it from the kernel; 4-5 is usual).
    public let maximumAdvertisements: UInt8
    /// Whether the controller has LE Extended Advertising: bluetoothd then lists `SupportedSecondaryChannels` and a
    /// `MaxAdvLen` of 251 (src/advertising.c `secondary_exists`, `get_supported_cap`), else none and 31.
    public let hasExtendedAdvertising: Bool
    /// bluetoothd's connection to the bus: a test may export objects of its own on it (as bluetoothd would).
    public private(set) var connection: BusConnection
    let adapter = AdapterProperties()

    // State dropped by `restart()`.
    /// The registered applications, by owner and root path.
    public internal(set) var applications: [ApplicationKey: FakeApplication] = [:] {
        didSet { stateChanged() }
    }
    var registeringApplications: Set<ApplicationKey> = []
    /// The registered advertisements' properties (`LEAdvertisement1`, as GetAll returned them), by owner and path.
    public internal(set) var advertisements: [ApplicationKey: [String: DBusValue]] = [:] {
        didSet { stateChanged() }
    }
    /// The advertisements the controller holds (the kernel's instances): power off clears them, and 5.66 does not
    /// notice (src/advertising.c has no handler for MGMT Advertising Removed), so they stay registered but silent.
    var controllerInstances: Set<ApplicationKey> = [] {
        didSet { stateChanged() }
    }
    /// The registered pairing agent: its owner, path and capability.
    public internal(set) var agent: (owner: String, path: ObjectPath, capability: String)? {
        didSet { stateChanged() }
    }
    var defaultAgent: ObjectPath?
    var devices: [ObjectPath: DeviceState] = [:] {
        didSet { stateChanged() }
    }
    var notifyStates: [ObjectPath: NotifyState] = [:] {
        didSet { stateChanged() }
    }
    /// `chrc->write_io`: our end of each AcquireWrite socket, by characteristic path.
    var writeStreams: [ObjectPath: Int32] = [:] {
        didSet { stateChanged() }
    }
    var valueWatches: [ApplicationKey: Task<Void, Never>] = [:]
    /// Follows each application's owner: 5.66 drops an app whose owner leaves the bus (`client_disconnect_cb`).
    var ownerWatches: [ApplicationKey: Task<Void, Never>] = [:]
    var nextHandle: UInt16 = 0x0010
    /// Whether notify sockets are read (see `holdNotifySockets()`).
    var notifySocketsHeld = false
    /// Whether a link going down says why first, as 5.83 and later do (`saysWhyLinksGoDown()`).
    var sendsDisconnectReasons = false
    /// Rung at each change of the fake's state, for `until(within:_:)`.
    let changes = ChangeSignal()

    // Counters, kept across restarts.
    /// Successful RegisterApplication calls.
    public private(set) var registrationCount = 0 {
        didSet { stateChanged() }
    }
    /// Why registrations failed, in order.
    public private(set) var registrationFailures: [String] = [] {
        didSet { stateChanged() }
    }
    /// GetManagedObjects calls made back to apps during RegisterApplication.
    public private(set) var managedObjectsCalls = 0 {
        didSet { stateChanged() }
    }
    /// Calls made to apps, by member (no-reply calls included).
    public private(set) var callsToApp: [String: Int] = [:] {
        didSet { stateChanged() }
    }
    /// Successful replies received from apps.
    public private(set) var repliesFromApp = 0 {
        didSet { stateChanged() }
    }
    /// Error replies received from apps, by D-Bus error name.
    public private(set) var errorsFromApp: [String: Int] = [:] {
        didSet { stateChanged() }
    }
    /// Successful RegisterAdvertisement calls.
    public internal(set) var advertisementRegistrations = 0 {
        didSet { stateChanged() }
    }
    /// `Device1.Disconnect` calls, by device path.
    public internal(set) var disconnectCalls: [ObjectPath: Int] = [:] {
        didSet { stateChanged() }
    }

    /// An app object, named as bluetoothd keys it: the owner's unique name and the object path.
    public struct ApplicationKey: Hashable, Sendable {
        /// The unique bus name of the connection that registered it, e.g. `:1.42`.
        public var owner: String
        /// The object path it was registered with.
        public var path: ObjectPath

        /// The key of the object at `path` registered by `owner`.
        public init(owner: String, path: ObjectPath) {
            self.owner = owner
            self.path = path
        }
    }

    /// Connects to the bus at `busAddress`, takes org.bluez and exports the adapter; throws if the name is taken.
    /// `maximumAdvertisements` is what the controller holds; `hasExtendedAdvertising` plays a controller with LE
    /// Extended Advertising; without `logger`, the fake logs nothing (everything with `DBUS_TRACE` set).
    public init(
        busAddress: String, maximumAdvertisements: UInt8 = 4, hasExtendedAdvertising: Bool = false,
        logger: Logger? = nil
    ) async throws {
        self.busAddress = busAddress
        self.maximumAdvertisements = maximumAdvertisements
        self.hasExtendedAdvertising = hasExtendedAdvertising
        var quiet = Logger(label: "fake-bluetoothd")
        quiet.logLevel = ProcessInfo.processInfo.environment["DBUS_TRACE"] != nil ? .trace : .critical
        self.logger = logger ?? quiet
        connection = try BusConnection(.address(busAddress), logger: self.logger)
        try await start()
    }

    /// The unique name bluetoothd has now (it changes on `restart()`).
    public var uniqueName: String { connection.uniqueName }

    /// Closes the connection (releasing org.bluez) and every notify fd.
    public func stop() {
        tearDown()
        connection.close()
    }

    /// bluetoothd exits and starts again: as 5.66 exits, the adapter is powered off, each advertisement gets
    /// `Release()` (`manager_destroy`), then the name is dropped; a new connection (a new unique name) takes it
    /// back with the adapter powered, and every registration, advertisement, agent and device is forgotten.
    public func restart() async throws {
        setPowered(false)
        releaseAdvertisements()
        // Released with a round trip before the connection closes: a close alone reaches the bus daemon some time
        // later, and the new connection's RequestName could come first and find the name still owned.
        try? await connection.releaseName(BlueZ566.service)
        stop()
        adapter.state.withLock { $0.isPowered = true }
        connection = try BusConnection(.address(busAddress), logger: logger)
        try await start()
    }

    private func start() async throws {
        try connection.addObjectManager(at: .root)
        try connection.export(BlueZ566.managerPath, [agentManagerInterface()])
        try connection.export(
            BlueZ566.adapterPath,
            [adapterInterface(), gattManagerInterface(), advertisingManagerInterface()])
        try await connection.requestName(BlueZ566.service)
    }

    private func tearDown() {
        for task in valueWatches.values { task.cancel() }
        valueWatches = [:]
        for task in ownerWatches.values { task.cancel() }
        ownerWatches = [:]
        for state in notifyStates.values { state.reader?.stop() }
        notifyStates = [:]
        for fd in writeStreams.values { close(fd) }
        writeStreams = [:]
        for device in devices.values {
            device.continuation.finish()
            for waiting in device.waitingRequests { waiting.resume() }
        }
        devices = [:]
        applications = [:]
        registeringApplications = []
        advertisements = [:]
        controllerInstances = []
        publishInstanceCount()
        agent = nil
        defaultAgent = nil
        nextHandle = 0x0010
    }

    // MARK: Calls to the app, counted

    /// Calls the app and counts the call, its reply or its error by name: e.g. `org.bluez.Agent1` methods on the
    /// registered agent, as bluetoothd would during pairing.
    public func callApp(
        _ owner: String, _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    ) async throws -> [DBusValue] {
        callsToApp[member, default: 0] += 1
        do {
            let reply = try await connection.call(
                owner, path: path, interface: interface, member: member, arguments: arguments)
            repliesFromApp += 1
            return reply
        } catch let error as DBusError {
            errorsFromApp[error.name, default: 0] += 1
            throw error
        }
    }

    /// A call flagged no-reply, as gdbus's `g_dbus_proxy_method_call` sends one with no reply function
    /// (StartNotify, StopNotify, Confirm, and WriteValue on a `write-without-response` characteristic).
    func callAppWithoutReply(
        _ owner: String, _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    ) {
        callsToApp[member, default: 0] += 1
        do {
            try connection.callWithoutReply(
                owner, path: path, interface: interface, member: member, arguments: arguments)
        } catch {
            logger.error("no-reply call not sent", metadata: ["member": "\(member)", "error": "\(error)"])
        }
    }

    // MARK: GattManager1 (src/gatt-database.c `manager_register_app`, `client_ready_cb`)

    private func registerApplication(_ arguments: [DBusValue], sender: String?) async throws -> [DBusValue] {
        guard let sender, case .objectPath(let root)? = arguments.first else {
            throw DBusError(name: BlueZ566.Error.invalidArguments, message: "Invalid arguments in method call")
        }
        let key = ApplicationKey(owner: sender, path: root)
        guard applications[key] == nil, !registeringApplications.contains(key) else {
            throw DBusError(name: BlueZ566.Error.alreadyExists, message: "Already Exists")
        }
        registeringApplications.insert(key)
        defer { registeringApplications.remove(key) }
        // 5.66 creates a GDBusClient on (sender, root), which calls GetManagedObjects before the reply is sent.
        managedObjectsCalls += 1
        let reply: [DBusValue]
        do {
            reply = try await callApp(sender, root, BlueZ566.objectManager, "GetManagedObjects")
        } catch {
            return try fail("No object received (\(error))")
        }
        let application: FakeApplication
        do {
            application = try FakeApplication(owner: sender, root: root, managedObjects: reply, firstHandle: nextHandle)
        } catch {
            return try fail("\(error)")
        }
        nextHandle = (application.attributes.last.map { $0.handle + 2 }) ?? nextHandle
        applications[key] = application
        registrationCount += 1
        try await watchValues(of: key)
        try await watchOwner(of: key)
        return []
    }

    private func fail(_ reason: String) throws -> [DBusValue] {
        registrationFailures.append(reason)
        throw DBusError(name: BlueZ566.Error.failed, message: "No valid service object found")
    }

    private func unregisterApplication(_ arguments: [DBusValue], sender: String?) throws -> [DBusValue] {
        guard let sender, case .objectPath(let root)? = arguments.first else {
            throw DBusError(name: BlueZ566.Error.invalidArguments, message: "Invalid arguments in method call")
        }
        let key = ApplicationKey(owner: sender, path: root)
        guard removeApplication(key) else {
            throw DBusError(name: BlueZ566.Error.doesNotExist, message: "Does Not Exist")
        }
        return []
    }

    /// Drops an application and its services (`app_free` -> `gatt_db_service_removed`): the notify fds close and
    /// every device's CCCD state for them goes (`remove_device_ccc`), so nobody is subscribed when the app comes
    /// back; a central must write its CCCD again. False when no such application is registered.
    @discardableResult
    private func removeApplication(_ key: ApplicationKey) -> Bool {
        guard let application = applications.removeValue(forKey: key) else { return false }
        valueWatches.removeValue(forKey: key)?.cancel()
        ownerWatches.removeValue(forKey: key)?.cancel()
        for characteristic in application.characteristics {
            notifyStates.removeValue(forKey: characteristic.path)?.reader?.stop()
            if let fd = writeStreams.removeValue(forKey: characteristic.path) { close(fd) }
            for path in devices.keys { devices[path]?.cccValues.removeValue(forKey: characteristic.path) }
        }
        return true
    }

    /// `client_disconnect_cb`: the owner left the bus (it exited or crashed) without unregistering.
    private func watchOwner(of key: ApplicationKey) async throws {
        let changes = try await connection.nameOwnerChanges(of: key.owner)
        ownerWatches[key] = Task { [weak self] in
            for await owner in changes where owner == nil {
                await self?.removeApplication(key)
                return
            }
        }
    }

    /// `database_add_ccc` sets a property watch on every notifying characteristic: PropertiesChanged{Value}
    /// from the app reaches subscribed devices whether StartNotify was called or not.
    private func watchValues(of key: ApplicationKey) async throws {
        let rule = MatchRule(
            sender: key.owner, pathNamespace: key.path, interface: BlueZ566.properties, member: "PropertiesChanged",
            arg0: BlueZ566.Interface.gattCharacteristic)
        let signals = try await connection.signals(matching: rule)
        valueWatches[key] = Task { [weak self] in
            for await signal in signals {
                guard signal.arguments.count >= 2, let changed = try? signal.arguments[1].asVardict(),
                    let value = try? changed["Value"]?.asBytes()
                else { continue }
                await self?.valueChanged(signal.path, value)
            }
        }
    }

    /// Powers the adapter off or on as `btmgmt power off/on` does: `Powered` changes (PropertiesChanged), and power
    /// off clears the controller's advertising sets behind bluetoothd's back (seen in the lab with 5.66).
    public func setPowered(_ isPowered: Bool) {
        adapter.state.withLock { $0.isPowered = isPowered }
        if !isPowered { controllerInstances = [] }
        stateChanged()
        try? connection.emitPropertiesChanged(
            path: BlueZ566.adapterPath, interface: BlueZ566.Interface.adapter, properties: ["Powered"])
    }

    /// How many advertisements are on the air: those the controller holds, while powered.
    public var advertisementsOnAir: Int { adapter.state.withLock { $0.isPowered } ? controllerInstances.count : 0 }

    // MARK: Exported interfaces

    private func adapterInterface() -> Interface {
        let adapter = adapter
        return Interface(
            BlueZ566.Interface.adapter,
            properties: [
                Property("Address", signature: "s", get: { .string(Self.adapterAddress) }),
                Property("AddressType", signature: "s", get: { .string("public") }),
                Property("Name", signature: "s", get: { .string("blemu-fake") }),
                Property(
                    "Alias", signature: "s", get: { .string(adapter.state.withLock { $0.alias }) },
                    set: { value in
                        let alias = try value.asString()
                        adapter.state.withLock { $0.alias = alias }
                    }),
                Property(
                    "Powered", signature: "b", get: { .boolean(adapter.state.withLock { $0.isPowered }) },
                    set: { value in
                        let isPowered = try value.asBool()
                        adapter.state.withLock { $0.isPowered = isPowered }
                    }),
            ])
    }

    private func gattManagerInterface() -> Interface {
        Interface(
            BlueZ566.Interface.gattManager,
            methods: [
                .returning("RegisterApplication", inputs: "oa{sv}") { [weak self] arguments, context in
                    guard let self else { throw DBusError(name: BlueZ566.Error.failed, message: "stopped") }
                    return try await self.registerApplication(arguments, sender: context.sender)
                },
                .returning("UnregisterApplication", inputs: "o") { [weak self] arguments, context in
                    guard let self else { throw DBusError(name: BlueZ566.Error.failed, message: "stopped") }
                    return try await self.unregisterApplication(arguments, sender: context.sender)
                },
            ])
    }
}

/// The adapter's writable properties, read on the bus's loop thread (so behind a lock, not the actor).
final class AdapterProperties: Sendable {
    struct State {
        var alias = "blemu-fake"
        var isPowered = true
        var activeAdvertisements: UInt8 = 0
    }
    let state = Mutex(State())
}
