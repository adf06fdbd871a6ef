// A GATT app written directly on the DBus module, only to prove the fake bluetoothd before the BlueZ backend
// exists. It answers as doc/gatt-api.txt asks and records every call it gets.
import DBus
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One characteristic of the minimal app.
struct MinimalCharacteristic: Sendable {
    var uuid: String
    var flags: [String]
    var value: [UInt8] = []
    /// Expose `NotifyAcquired`, so bluetoothd uses AcquireNotify.
    var offersAcquireNotify = false
    /// Answer ReadValue with this error (name, message) instead of the value.
    var readError: (name: String, message: String)? = nil
    /// Writes longer than this are answered InvalidValueLength.
    var maximumWriteLength = 512
    /// Extra descriptors (uuid, flags).
    var descriptors: [(uuid: String, flags: [String])] = []
}

/// The minimal app: `/app` ObjectManager, one service, the given characteristics at `/app/service0/charN`.
final class MinimalGATTApp: Sendable {
    struct Call: Sendable {
        var member: String
        var path: ObjectPath
        var options: [String: DBusValue]
        var value: [UInt8]
        var expectsReply: Bool
        var sender: String?
    }

    let connection: BusConnection
    let root: ObjectPath = "/app"
    let serviceUUID: String
    private let state: Mutex<(calls: [Call], values: [ObjectPath: [UInt8]], notifyFDs: [ObjectPath: Int32])>
    /// Tests waiting in `until(within:_:)`, asked again at every call the app records.
    private let waiters = Mutex<(next: Int, pending: [Int: Waiter])>((0, [:]))

    private struct Waiter {
        let condition: @Sendable ([Call]) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    init(connection: BusConnection, serviceUUID: String = "180d", characteristics: [MinimalCharacteristic]) throws {
        self.connection = connection
        self.serviceUUID = serviceUUID
        var values: [ObjectPath: [UInt8]] = [:]
        for (index, characteristic) in characteristics.enumerated() {
            values[root.appending("service0").appending("char\(index)")] = characteristic.value
        }
        state = Mutex(([], values, [:]))
        try connection.addObjectManager(at: root)
        let service = root.appending("service0")
        try connection.export(
            service,
            [
                Interface(
                    "org.bluez.GattService1",
                    properties: [
                        Property("UUID", signature: "s", get: { .string(serviceUUID) }),
                        Property("Primary", signature: "b", get: { .boolean(true) }),
                    ])
            ])
        for (index, characteristic) in characteristics.enumerated() {
            let path = service.appending("char\(index)")
            try export(characteristic, at: path, service: service)
            for (d, descriptor) in characteristic.descriptors.enumerated() {
                try connection.export(
                    path.appending("desc\(d)"),
                    [
                        Interface(
                            "org.bluez.GattDescriptor1",
                            methods: [
                                Method(
                                    "ReadValue", inputs: "a{sv}", outputs: "ay",
                                    immediate: { call in call.reply([.bytes([])]) })
                            ],
                            properties: [
                                Property("UUID", signature: "s", get: { .string(descriptor.uuid) }),
                                Property("Characteristic", signature: "o", get: { .objectPath(path) }),
                                Property("Flags", signature: "as", get: { .strings(descriptor.flags) }),
                            ])
                    ])
            }
        }
    }

    /// Every call received, in order.
    var calls: [Call] { state.withLock { $0.calls } }
    /// Calls of one member.
    func calls(_ member: String) -> [Call] { calls.filter { $0.member == member } }

    /// True once exactly `count` calls of `member` were received, asked again at each call; false after `limit`.
    func until(received member: String, count: Int, within limit: Duration = .seconds(5)) async -> Bool {
        await until(within: limit) { calls in calls.filter { $0.member == member }.count == count }
    }

    /// True as soon as `condition` holds for the calls received (at once if it holds now), asked again at each call
    /// the app records; false when `limit` passes first.
    func until(within limit: Duration = .seconds(5), _ condition: @escaping @Sendable ([Call]) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            let id: Int? = waiters.withLock { waiters in
                guard !condition(calls) else { return nil }
                let id = waiters.next
                waiters.next += 1
                waiters.pending[id] = Waiter(condition: condition, continuation: continuation)
                return id
            }
            guard let id else { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: limit)
                // Whoever takes the waiter out answers it: the last call recorded, or this timeout.
                let waiter = waiters.withLock { $0.pending.removeValue(forKey: id) }
                waiter?.continuation.resume(returning: condition(calls))
            }
        }
    }
    /// The stored value of characteristic N.
    func value(_ index: Int) -> [UInt8] { state.withLock { $0.values[path(index)] ?? [] } }
    /// The object path of characteristic N.
    func path(_ index: Int) -> ObjectPath { root.appending("service0").appending("char\(index)") }

    /// Sends `value` on the AcquireNotify socket of characteristic N; false if there is none or it is closed.
    func sendOnSocket(_ index: Int, _ value: [UInt8]) -> Bool {
        guard let fd = state.withLock({ $0.notifyFDs[path(index)] }) else { return false }
        return value.withUnsafeBytes { send(fd, $0.baseAddress, value.count, Int32(MSG_NOSIGNAL)) } == value.count
    }

    /// Emits PropertiesChanged{Value} for characteristic N (the StartNotify path).
    func emitValue(_ index: Int, _ value: [UInt8]) throws {
        try connection.emitPropertiesChanged(
            path: path(index), interface: "org.bluez.GattCharacteristic1", changed: ["Value": .bytes(value)])
    }

    private func record(_ call: borrowing MethodCall, value: [UInt8] = [], options: DBusValue?) {
        let entry = Call(
            member: call.member, path: call.path, options: (try? options?.asVardict()) ?? [:], value: value,
            expectsReply: call.expectsReply, sender: call.sender)
        let calls = state.withLock { state in
            state.calls.append(entry)
            return state.calls
        }
        let satisfied = waiters.withLock { waiters in
            let ids = waiters.pending.filter { $0.value.condition(calls) }.map(\.key)
            return ids.compactMap { waiters.pending.removeValue(forKey: $0) }
        }
        for waiter in satisfied { waiter.continuation.resume(returning: true) }
    }

    private func export(_ characteristic: MinimalCharacteristic, at path: ObjectPath, service: ObjectPath) throws {
        var properties = [
            Property("UUID", signature: "s", get: { .string(characteristic.uuid) }),
            Property("Service", signature: "o", get: { .objectPath(service) }),
            Property("Flags", signature: "as", get: { .strings(characteristic.flags) }),
        ]
        if characteristic.offersAcquireNotify {
            properties.append(Property("NotifyAcquired", signature: "b", get: { .boolean(false) }))
        }
        let read = Method(
            "ReadValue", inputs: "a{sv}", outputs: "ay",
            immediate: { [self] call in
                record(call, options: call.arguments.first)
                if let error = characteristic.readError { return call.fail(error.name, error.message) }
                let options = (try? call.arguments.first?.asVardict()) ?? [:]
                let offset = Int((try? options["offset"]?.asUInt16()) ?? 0)
                let value = state.withLock { $0.values[path] ?? [] }
                guard offset <= value.count else { return call.fail("org.bluez.Error.InvalidOffset", "") }
                call.reply([.bytes(Array(value[offset...]))])
            })
        let write = Method(
            "WriteValue", inputs: "aya{sv}",
            immediate: { [self] call in
                let value = (try? call.arguments[0].asBytes()) ?? []
                record(call, value: value, options: call.arguments[1])
                let options = (try? call.arguments[1].asVardict()) ?? [:]
                if options["prepare-authorize"] != nil { return call.reply() }
                guard value.count <= characteristic.maximumWriteLength else {
                    return call.fail("org.bluez.Error.InvalidValueLength", "")
                }
                let offset = Int((try? options["offset"]?.asUInt16()) ?? 0)
                state.withLock { state in
                    var stored = state.values[path] ?? []
                    if stored.count < offset + value.count {
                        stored += [UInt8](repeating: 0, count: offset + value.count - stored.count)
                    }
                    stored.replaceSubrange(offset..<offset + value.count, with: value)
                    state.values[path] = stored
                }
                call.reply()
            })
        let acquire = Method(
            "AcquireNotify", inputs: "a{sv}", outputs: "hq",
            immediate: { [self] call in
                record(call, options: call.arguments.first)
                var pair: [Int32] = [0, 0]
                guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0 else {
                    return call.fail("org.bluez.Error.Failed", "socketpair")
                }
                state.withLock { $0.notifyFDs[path] = pair[0] }
                // The reply duplicates the fd; ours is closed once it is queued.
                call.reply([.unixFD(UnixFD(pair[1])), .uint16(23)])
                close(pair[1])
            })
        var methods = [read, write, acquire]
        for member in ["StartNotify", "StopNotify", "Confirm"] {
            methods.append(
                Method(
                    member,
                    immediate: { [self] call in
                        record(call, options: nil)
                        call.reply()
                    }))
        }
        try connection.export(
            path, [Interface("org.bluez.GattCharacteristic1", methods: methods, properties: properties)])
    }
}
