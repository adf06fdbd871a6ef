import BlueZModel
import DBus
import FoundationEssentials
import Synchronization
import Waiting

/// bluetoothd's objects as its ObjectManager describes them: path, then interface, then property.
typealias ManagedObjects = [ObjectPath: [String: [String: DBusValue]]]

/// A live copy of bluetoothd's object tree, kept by InterfacesAdded/Removed and PropertiesChanged, plus the
/// notifications received on the characteristics being listened to.
///
/// Signals are applied on the bus loop thread, in wire order, before any later method reply resumes its caller.
/// So when a call such as `ReadValue` returns, every signal bluetoothd sent before its reply is already here: the
/// `Value` change a read causes can never be mistaken for a notification that arrives after `StartNotify`.
/// State is behind a `Mutex`, not in an actor, to keep that ordering (an actor hop would lose it).
final class ObjectMirror: Sendable {
    private struct State {
        var objects: ManagedObjects = [:]
        var listening: [ObjectPath: ContinuousClock.Instant] = [:]
        var notifications: [ObjectPath: [(at: Duration, bytes: [UInt8])]] = [:]
        /// Devices whose `Connected` turned false since the mirror was made: a link that dropped.
        var disconnected: Set<ObjectPath> = []
    }

    private let state = Mutex(State())
    /// Rung after each change of the copy, for `wait(upTo:for:)`.
    private let changes = ChangeSignal()

    /// Replaces the copy with a GetManagedObjects snapshot and wakes the waiters it satisfies.
    func load(_ objects: ManagedObjects) {
        state.withLock { $0.objects = objects }
        changes.changed()
    }

    /// Applies one signal from bluetoothd (InterfacesAdded/Removed, PropertiesChanged); others are ignored.
    func apply(_ signal: Signal) {
        let applied = state.withLock { state -> Bool in
            switch (signal.interface, signal.member) {
            case (BlueZName.FreeDesktop.objectManager, BlueZName.FreeDesktop.interfacesAdded):
                guard signal.arguments.count == 2, let path = try? signal.arguments[0].asObjectPath(),
                    let interfaces = try? Self.interfaces(signal.arguments[1])
                else { return false }
                state.objects[path, default: [:]].merge(interfaces) { _, new in new }
            case (BlueZName.FreeDesktop.objectManager, BlueZName.FreeDesktop.interfacesRemoved):
                guard signal.arguments.count == 2, let path = try? signal.arguments[0].asObjectPath(),
                    let names = try? signal.arguments[1].asStrings()
                else { return false }
                for name in names { state.objects[path]?[name] = nil }
                if state.objects[path]?.isEmpty == true { state.objects[path] = nil }
            case (BlueZName.FreeDesktop.properties, BlueZName.FreeDesktop.propertiesChanged):
                guard signal.arguments.count >= 2, let interface = try? signal.arguments[0].asString(),
                    let changed = try? signal.arguments[1].asVardict()
                else { return false }
                state.objects[signal.path, default: [:]][interface, default: [:]].merge(changed) { _, new in new }
                if interface == BlueZName.Interface.device,
                    (try? changed[BlueZName.Property.connected]?.asBool()) == false
                {
                    state.disconnected.insert(signal.path)
                }
                if signal.arguments.count == 3, let invalidated = try? signal.arguments[2].asStrings() {
                    for name in invalidated { state.objects[signal.path]?[interface]?[name] = nil }
                }
                if interface == BlueZName.Interface.gattCharacteristic,
                    let since = state.listening[signal.path],
                    let bytes = try? changed[BlueZName.Property.value]?.asBytes()
                {
                    state.notifications[signal.path, default: []].append((since.duration(to: .now), bytes))
                }
            default:
                return false
            }
            return true
        }
        if applied { changes.changed() }
    }

    /// A snapshot of the copy.
    var objects: ManagedObjects { state.withLock { $0.objects } }

    /// Whether `device`'s link dropped (bluetoothd reported `Connected` false) since the mirror was made or
    /// `watchLink(of:)` was called. Signals come before later replies, so a read that failed because the link
    /// dropped usually finds this already true.
    func hasDisconnected(_ device: ObjectPath) -> Bool {
        state.withLock { $0.disconnected.contains(device) }
    }

    /// Forgets earlier disconnections of `device`: from now on `hasDisconnected` tells of the link just made.
    func watchLink(of device: ObjectPath) {
        _ = state.withLock { $0.disconnected.remove(device) }
    }

    /// Starts recording `Value` changes of `path` as notifications, timed from `since`.
    func listen(to path: ObjectPath, since: ContinuousClock.Instant) {
        state.withLock { $0.listening[path] = since }
    }

    /// Stops recording notifications for every path, returns what was recorded by path, and forgets it: the next
    /// `listen` starts from nothing.
    func takeNotifications() -> [ObjectPath: [(at: Duration, bytes: [UInt8])]] {
        state.withLock { state in
            state.listening = [:]
            defer { state.notifications = [:] }
            return state.notifications
        }
    }

    /// Waits until each path in `expected` has recorded those values, in that order, among the notifications since
    /// it was listened to (others may come between: a schedule's); false when `timeout` passes first. Waits on the
    /// signals themselves: the timeout only bounds the wait.
    func waitForNotifications(_ expected: [ObjectPath: [[UInt8]]], upTo timeout: Duration) async -> Bool {
        await wait(upTo: timeout) { _, heard in
            expected.allSatisfy { path, values in (heard[path] ?? []).containsInOrder(values) } ? true : nil
        } ?? false
    }

    /// The first non-nil answer of `find` on the copy, now or after a later change; nil when `timeout` passes
    /// first. Waits on the signals themselves: the timeout only bounds the wait.
    func wait<T: Sendable>(
        upTo timeout: Duration, for find: @escaping @Sendable (ManagedObjects) -> T?
    ) async -> T? {
        await wait(upTo: timeout) { objects, _ in find(objects) }
    }

    /// `wait(upTo:for:)` whose `find` also sees the notifications each listened path has recorded.
    private func wait<T: Sendable>(
        upTo timeout: Duration, for find: @escaping @Sendable (ManagedObjects, [ObjectPath: [[UInt8]]]) -> T?
    ) async -> T? {
        await changes.first(within: timeout) {
            state.withLock { state in find(state.objects, state.notifications.mapValues { $0.map(\.bytes) }) }
        }
    }

    /// Parses GetManagedObjects' `a{oa{sa{sv}}}`; throws `MarshalError` on another shape.
    static func managedObjects(_ value: DBusValue) throws -> ManagedObjects {
        var objects: ManagedObjects = [:]
        for entry in try value.asEntries() {
            objects[try entry.key.asObjectPath()] = try interfaces(entry.value)
        }
        return objects
    }

    /// Parses `a{sa{sv}}`; throws `MarshalError` on another shape.
    static func interfaces(_ value: DBusValue) throws -> [String: [String: DBusValue]] {
        var interfaces: [String: [String: DBusValue]] = [:]
        for entry in try value.asEntries() {
            interfaces[try entry.key.asString()] = try entry.value.asVardict()
        }
        return interfaces
    }
}
