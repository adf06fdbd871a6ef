// The simulated central: a test connects one (`connect(address:)`) and reads, writes and subscribes as a remote
// device would, and the app under test gets what bluetoothd 5.66 sends it then (src/shared/gatt-server.c for the
// ATT side, src/gatt-database.c `chrc_read_cb`, `chrc_write_cb`, `send_write`, `ccc_write_cb`,
// `property_changed_cb`, `sock_io_read`, `conf_cb`, `append_options`). The central gets ATT answers and errors.
import DBus
import GATTModel
import Synchronization

/// A connected central as a test holds it: the handle `FakeBluetoothd.connect(address:)` returns.
public struct FakeCentral: Sendable {
    /// Its address, e.g. `11:22:33:44:55:01`.
    public let address: String
    /// Its Device1 object, e.g. `/org/bluez/hci0/dev_11_22_33_44_55_01`.
    public let path: ObjectPath
    /// Every notification and indication it receives, in order; finishes when its link goes down.
    public let notifications: AsyncStream<FakeNotification>
}

/// One notification or indication as a central receives it.
public struct FakeNotification: Sendable, Hashable {
    /// The app's characteristic object it came from.
    public var characteristic: ObjectPath
    /// The value, cut to the central's MTU - 3 as bluetoothd cuts it.
    public var value: [UInt8]
    /// Whether it came as an indication (the central's CCCD is 2) rather than a notification.
    public var isIndication: Bool

    /// A notification or indication of `value` from `characteristic`.
    public init(characteristic: ObjectPath, value: [UInt8], isIndication: Bool) {
        self.characteristic = characteristic
        self.value = value
        self.isIndication = isIndication
    }
}

/// A characteristic or descriptor, named by its UUID (`"2a37"`, or 128-bit) or its app object path (`"/..."`).
public struct AttributeReference: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The UUID or object path, as written.
    public var text: String
    /// The attribute named by a UUID or an object path.
    public init(stringLiteral text: String) { self.text = text }
    /// The attribute at an app object path.
    public init(_ path: ObjectPath) { text = path.rawValue }
    /// The UUID or object path, as written.
    public var description: String { text }
}

/// One Prepare Write Request of a long or reliable write.
public struct PreparedWrite: Sendable {
    /// The characteristic or descriptor written.
    public var attribute: AttributeReference
    /// Where in the value this part goes.
    public var offset: UInt16
    /// This part's bytes.
    public var value: [UInt8]

    /// A part of `value` bytes at `offset` of `attribute`.
    public init(attribute: AttributeReference, offset: UInt16, value: [UInt8]) {
        self.attribute = attribute
        self.offset = offset
        self.value = value
    }
}

extension FakeBluetoothd {
    /// What the fake keeps per connected device.
    struct DeviceState {
        var address: String
        var mtu: UInt16
        var security: FakeATT.LinkSecurity
        var isTrusted: Bool
        /// Whether the central confirms indications at once; if not, see `confirmIndication(from:)`.
        var confirmsIndications: Bool
        /// CCCD values by characteristic path: 1 notifications, 2 indications.
        var cccValues: [ObjectPath: UInt16] = [:]
        /// Indications sent and not yet confirmed (ATT allows one outstanding per bearer), then those waiting.
        var awaitingConfirmation: FakeNotification?
        var heldIndications: [FakeNotification] = []
        /// ATT allows one outstanding request per bearer (bt_att's request queue; no EATT here): requests
        /// wait their turn, so a central never has two ReadValue calls pending at bluetoothd.
        var isRequestOutstanding = false
        var waitingRequests: [CheckedContinuation<Void, Never>] = []
        /// The prepare queue (5.66 keeps one per `bt_gatt_server`, that is per connection) and the characteristics
        /// the app authorized for it (`chrc->prep_authorized`).
        var preparedWrites: [QueuedWrite] = []
        var prepareAuthorized: Set<ObjectPath> = []
        let continuation: AsyncStream<FakeNotification>.Continuation
        /// The Device1 `Connected` property.
        let link = DeviceLink()
    }

    /// `chrc->ntfy_cnt` and `chrc->notify_io` of one characteristic.
    struct NotifyState {
        var count: UInt32 = 0
        var reader: NotifyReader?
    }

    /// Where a found attribute lives.
    struct FoundAttribute {
        var owner: String
        var path: ObjectPath
        var interface: String
        var parsed: FakeATT.ParsedFlags
        var characteristic: FakeCharacteristic?
    }

    // MARK: Connections

    /// A central connects: adds its Device1 object (InterfacesAdded from `/`) and returns its handle.
    /// `security` is the level the link reached (pairing is not simulated); `mtu` the ATT MTU it exchanged;
    /// `isTrusted` the Device1 `Trusted` property; with `confirmsIndications` false, each indication waits for
    /// `confirmIndication(from:)`.
    public func connect(
        address: String, mtu: UInt16 = 23, security: FakeATT.LinkSecurity = .low, isTrusted: Bool = false,
        confirmsIndications: Bool = true
    ) throws -> FakeCentral {
        let path = BlueZ566.adapterPath.appending("dev_" + address.replacingOccurrences(of: ":", with: "_"))
        let (stream, continuation) = AsyncStream<FakeNotification>.makeStream()
        devices[path] = DeviceState(
            address: address, mtu: mtu, security: security, isTrusted: isTrusted,
            confirmsIndications: confirmsIndications, continuation: continuation)
        let link = devices[path]?.link ?? DeviceLink()
        let properties: [(String, Signature, DBusValue)] = [
            ("Address", "s", .string(address)), ("AddressType", "s", .string("public")),
            ("Adapter", "o", .objectPath(BlueZ566.adapterPath)),
            ("Paired", "b", .boolean(security > .low)), ("Trusted", "b", .boolean(isTrusted)),
        ]
        try connection.export(
            path,
            [
                Interface(
                    BlueZ566.Interface.device,
                    methods: [
                        .returning("Disconnect", inputs: "") { [weak self] _, _ in
                            await self?.requestDisconnect(path)
                            return []
                        }
                    ],
                    properties: properties.map { name, signature, value in
                        Property(name, signature: signature, get: { value })
                    } + [Property("Connected", signature: "b", get: { .boolean(link.isConnected.withLock { $0 }) })])
            ])
        return FakeCentral(address: address, path: path, notifications: stream)
    }

    /// The central disconnects: its subscriptions end as if it wrote 0 to each CCCD (closing the fd or calling
    /// StopNotify when it was the last), and its Device1 object goes (InterfacesRemoved).
    public func disconnect(_ central: FakeCentral) {
        linkDown(central.path)
        sayWhy(central.path, "org.bluez.Reason.Remote", "Connection terminated by remote user")
        connection.unexport(central.path)
    }

    /// From now on a link going down says why first: BlueZ 5.83+ sends `Device1.Disconnected(reason, message)`
    /// before `Connected` turns false (src/device.c `device_disconnected`; names and sentences from its table).
    public func saysWhyLinksGoDown() { sendsDisconnectReasons = true }

    /// `Device1.Disconnected` for `path`, when this fake plays 5.83 or later.
    private func sayWhy(_ path: ObjectPath, _ reason: String, _ message: String) {
        guard sendsDisconnectReasons else { return }
        try? connection.emitSignal(
            path: path, interface: BlueZ566.Interface.device, member: "Disconnected",
            arguments: [.string(reason), .string(message)])
    }

    /// `Device1.Disconnect` (5.66 src/device.c `dev_disconnect`, `device_request_disconnect`): the link goes down
    /// as on any disconnection, `Connected` turns false (PropertiesChanged), then the call is answered; the object
    /// stays (5.66 removes a temporary device only after its timeout). A device not connected is answered at once.
    func requestDisconnect(_ path: ObjectPath) {
        disconnectCalls[path, default: 0] += 1
        guard let device = devices[path] else { return }
        linkDown(path)
        sayWhy(path, "org.bluez.Reason.Local", "Connection terminated by local host")
        device.link.isConnected.withLock { $0 = false }
        try? connection.emitPropertiesChanged(
            path: path, interface: BlueZ566.Interface.device, properties: ["Connected"])
    }

    /// Whether a device is connected now (its Device1 `Connected`).
    public func isConnected(_ central: FakeCentral) -> Bool { devices[central.path] != nil }

    /// The link is gone: subscriptions end as if the device wrote 0 to each CCCD (closing the fd or calling
    /// StopNotify when it was the last), its notification stream and waiting requests end.
    func linkDown(_ path: ObjectPath) {
        guard let device = devices[path] else { return }
        for characteristic in device.cccValues.keys { disable(characteristic) }
        devices.removeValue(forKey: path)?.continuation.finish()
        for waiting in device.waitingRequests { waiting.resume() }
    }

    // MARK: Reads (gatt-server `read_cb`/`read_blob_cb`, gatt-database `chrc_read_cb`, `read_reply_cb`)

    /// One Read Request (offset 0) or Read Blob Request: the permission check first (0x02, 0x05, 0x0F without
    /// calling the app), then ReadValue; the response holds at most MTU-1 bytes.
    public func read(
        _ attribute: AttributeReference, offset: UInt16 = 0, by central: FakeCentral
    ) async -> Result<[UInt8], ATTError> {
        await beginRequest(central)
        defer { endRequest(central) }
        guard let device = devices[central.path] else { return .failure(.unlikelyError) }
        guard let found = find(attribute) else { return .failure(.invalidHandle) }
        if let error = FakeATT.check(found.parsed.permissions, for: .read, at: device.security) {
            return .failure(error)
        }
        let reply: [DBusValue]
        do {
            reply = try await callApp(
                found.owner, found.path, found.interface, "ReadValue",
                [options(for: device, central.path, offset: offset)])
        } catch let error as DBusError {
            return .failure(FakeATT.code(forErrorNamed: error.name, message: error.message, on: .read))
        } catch {
            return .failure(.unlikelyError)
        }
        // `read_reply_cb`: a reply that is not an array is Request Not Supported; values are cut to 512.
        guard reply.count == 1, let value = try? reply[0].asBytes() else { return .failure(.requestNotSupported) }
        return .success(Array(value.prefix(512).prefix(Int(device.mtu) - 1)))
    }

    /// A long read as a central performs it: Read, then Read Blob at the received length while responses are
    /// full (MTU-1 bytes). Each step calls ReadValue with the offset.
    public func readLong(
        _ attribute: AttributeReference, by central: FakeCentral
    ) async -> Result<[UInt8], ATTError> {
        guard let mtu = devices[central.path]?.mtu else { return .failure(.unlikelyError) }
        var value: [UInt8] = []
        while true {
            switch await read(attribute, offset: UInt16(value.count), by: central) {
            case .failure(let error): return .failure(error)
            case .success(let part):
                value += part
                if part.count < Int(mtu) - 1 || value.count >= 512 { return .success(value) }
            }
        }
    }

    // MARK: One request at a time per bearer

    func beginRequest(_ central: FakeCentral) async {
        guard devices[central.path]?.isRequestOutstanding == true else {
            devices[central.path]?.isRequestOutstanding = true
            return
        }
        await withCheckedContinuation { devices[central.path]?.waitingRequests.append($0) }
    }

    /// Hands the bearer to the next waiting request (it stays outstanding), or frees it.
    func endRequest(_ central: FakeCentral) {
        guard var device = devices[central.path] else { return }
        if device.waitingRequests.isEmpty {
            device.isRequestOutstanding = false
            devices[central.path] = device
        } else {
            let next = device.waitingRequests.removeFirst()
            devices[central.path] = device
            next.resume()
        }
    }

    // MARK: Lookup and options

    /// The characteristic as registered, by reference.
    public func characteristic(_ attribute: AttributeReference) -> FakeCharacteristic? {
        find(attribute)?.characteristic
    }

    /// Every registered application.
    public var registeredApplications: [FakeApplication] { Array(applications.values) }

    func owner(of path: ObjectPath) -> String? {
        applications.values.first { $0.characteristics.contains { $0.path == path } }?.owner
    }

    func find(_ attribute: AttributeReference) -> FoundAttribute? {
        let uuid = BluetoothUUID(attribute.text)
        for application in applications.values {
            for characteristic in application.characteristics {
                if characteristic.path.rawValue == attribute.text || characteristic.uuid == uuid {
                    return FoundAttribute(
                        owner: application.owner, path: characteristic.path,
                        interface: BlueZ566.Interface.gattCharacteristic, parsed: characteristic.parsed,
                        characteristic: characteristic)
                }
                for descriptor in characteristic.descriptors
                where descriptor.path.rawValue == attribute.text || descriptor.uuid == uuid {
                    return FoundAttribute(
                        owner: application.owner, path: descriptor.path,
                        interface: BlueZ566.Interface.gattDescriptor, parsed: descriptor.parsed, characteristic: nil)
                }
            }
        }
        return nil
    }

    /// `append_options`: device, offset (only when non-zero), link, mtu. `type` is never sent.
    func options(for device: DeviceState, _ path: ObjectPath, offset: UInt16) -> DBusValue {
        var entries: [DBusValue.DictionaryEntry] = [.init(.string("device"), .variant(.objectPath(path)))]
        if offset != 0 { entries.append(.init(.string("offset"), .variant(.uint16(offset)))) }
        entries.append(.init(.string("link"), .variant(.string("LE"))))
        entries.append(.init(.string("mtu"), .variant(.uint16(device.mtu))))
        return .dictionary(key: "s", value: "v", entries)
    }

    /// `acquire_notify_setup`: the same options, for the first subscriber only.
    func acquireOptions(for device: DeviceState, _ path: ObjectPath) -> DBusValue {
        options(for: device, path, offset: 0)
    }
}

/// A device's `Connected`, read on the bus's loop thread (so behind a lock, not the actor).
final class DeviceLink: Sendable {
    let isConnected = Mutex(true)
}
