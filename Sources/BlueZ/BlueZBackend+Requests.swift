import BlueZAgent
import BlueZModel
import DBus
import GATTModel
import Glibc
import Logging
@_spi(Backend) import Peripheral

// bluetoothd's calls on the exported characteristics and descriptors, turned into requests for the router and
// `BackendEvent`s. Each arrives on the loop thread, this actor's executor, as a synchronous handler: the call is
// answered there (nonisolated code that owns the `MethodCall`), and the backend's state is reached with
// `onLoop`.
// Options as 5.66:src/gatt-database.c `append_options` sends them: `device`, `mtu`, `offset` (only when non-zero),
// `link`, `prepare-authorize` (only when true). All are treated as optional: older versions omit some.
extension BlueZBackend {
    /// The request options we use, each with its default when absent.
    struct RequestOptions {
        var device: String = "unknown device"
        var mtu: Int = Central.defaultATTMTU
        var offset: Int = 0
        var isPrepareAuthorize = false

        /// Reads the `a{sv}` that is the reader's next argument, in place (`Method.Decoding.inPlace`): a read's
        /// options as `DBusValue`s cost about 5,000 instructions more
        /// (Benchmarks/README.md, "Options read in place"). A missing option, or one of another type, keeps its
        /// default; a device path equal to `lastDevice` is that string itself.
        init(_ reader: inout ArgumentReader, lastDevice: String = "") {
            var options = RequestOptions()
            _ = reader.vardict { entry in
                if entry.hasKey(BlueZName.Option.device) {
                    if let path = entry.objectPath(reusing: lastDevice) { options.device = path.rawValue }
                } else if entry.hasKey(BlueZName.Option.mtu) {
                    if let mtu = entry.uint16() { options.mtu = Int(mtu) }
                } else if entry.hasKey(BlueZName.Option.offset) {
                    if let offset = entry.uint16() { options.offset = Int(offset) }
                } else if entry.hasKey(BlueZName.Option.prepareAuthorize) {
                    if let flag = entry.boolean() { options.isPrepareAuthorize = flag }
                }
            }
            self = options
        }

        private init() {}
    }

    /// The options of a call whose only argument is them (ReadValue, AcquireNotify, AcquireWrite).
    nonisolated func requestOptions(_ call: borrowing MethodCall) -> RequestOptions {
        let lastDevice = lastDevice
        return call.readArguments { RequestOptions(&$0, lastDevice: lastDevice) }
    }

    /// The value and options of a WriteValue call (`aya{sv}`).
    nonisolated func writeArguments(_ call: borrowing MethodCall) -> (value: [UInt8], options: RequestOptions) {
        let lastDevice = lastDevice
        return call.readArguments { reader in
            let value = reader.bytes() ?? []
            return (value, RequestOptions(&reader, lastDevice: lastDevice))
        }
    }

    /// The device the last request named: the next request's path is that string when it names the same device,
    /// so it is neither built again nor compared byte by byte in `remember`.
    private nonisolated var lastDevice: String { namedDevices.withLock { $0.last } }

    /// Keeps the requesting device's path, so that `disconnect` can find the centrals bluetoothd told us about.
    nonisolated func remember(_ options: RequestOptions) {
        namedDevices.withLock { named in
            guard named.last != options.device else { return }
            named.last = options.device
            guard options.device.hasPrefix(adapterPath.rawValue + "/") else { return }
            named.all.insert(options.device)
        }
    }

    nonisolated func handlers() -> GATTApplication.Handlers {
        GATTApplication.Handlers(
            read: { [weak self] call, characteristic in self?.read(call, characteristic) },
            write: { [weak self] call, characteristic in self?.write(call, characteristic) },
            startNotify: { [weak self] call, characteristic in self?.startNotify(call, characteristic) },
            stopNotify: { [weak self] call, characteristic in self?.stopNotify(call, characteristic) },
            confirm: { [weak self] call, characteristic in self?.confirm(call, characteristic) },
            acquireNotify: { [weak self] call, characteristic in self?.acquireNotify(call, characteristic) },
            acquireWrite: { [weak self] call, characteristic in self?.acquireWrite(call, characteristic) },
            isNotifying: { [weak self] id in self?.routes.withLock { $0.table.isNotifying(id) } ?? false },
            isNotifyAcquired: { [weak self] id in self?.routes.withLock { $0.table.isAcquired(id) } ?? false },
            isWriteAcquired: { [weak self] id in self?.onLoop { $0.writeStreams.isWriteAcquired(id) } ?? false },
            readDescriptor: { [weak self] call, path, descriptor in self?.readDescriptor(call, path, descriptor) },
            writeDescriptor: { [weak self] call, path, descriptor in self?.writeDescriptor(call, path, descriptor) })
    }

    /// The security bluetoothd has already enforced before calling us: its static `encrypt-*` flags
    /// (docs/bluez.md, "Security and pairing") reject a weaker link with 0x05/0x0F, so any call that reaches us has at
    /// least this level.
    nonisolated func linkSecurity(_ characteristic: Characteristic, _ operation: AttributeOperation) -> SecurityLevel {
        characteristic.effectiveSecurity[operation]
    }

    // MARK: Characteristics

    private nonisolated func read(_ call: consuming MethodCall, _ characteristic: Characteristic) {
        guard let call = owner.admit(call) else { return }
        let options = requestOptions(call)
        remember(options)
        let id = characteristic.id
        // Formatted only when the line is logged (an autoclosure): most runs log requests at no level at all.
        let summary = RequestSummary(operation: "read", id: id, device: options.device, offset: options.offset)
        deliver(
            IncomingRead(
                central: Central(id: options.device, attMTU: options.mtu), characteristicID: id,
                offset: options.offset, linkSecurity: linkSecurity(characteristic, .read),
                errorDelivery: .throughBlueZ,
                reply: MethodCallReply(call: call, operation: .read, summary: summary, logger: requestLogger)))
    }

    private nonisolated func write(_ call: consuming MethodCall, _ characteristic: Characteristic) {
        guard let call = owner.admit(call) else { return }
        let (value, options) = writeArguments(call)
        remember(options)
        let id = characteristic.id
        let summary = RequestSummary(
            operation: options.isPrepareAuthorize ? "prepare-authorize" : "write", id: id, device: options.device,
            offset: options.offset, value: value)
        // Each branch hands its own reply over: Swift 6.2's move-only checker asserts on a `MethodCallReply?` local
        // converted to the optional existential (docs/packaging.md, "Two compilers").
        func writes(_ reply: consuming (any RequestReply & ~Copyable)?) -> IncomingWrites {
            IncomingWrites(
                central: Central(id: options.device, attMTU: options.mtu),
                writes: [IncomingWrites.Write(characteristicID: id, offset: options.offset, value: value)],
                linkSecurity: linkSecurity(characteristic, .write), isAuthorizationOnly: options.isPrepareAuthorize,
                errorDelivery: .throughBlueZ, reply: reply)
        }
        if call.expectsReply {
            deliver(writes(MethodCallReply(call: call, operation: .write, summary: summary, logger: requestLogger)))
        } else {
            // Write Without Response (or a Write Request bluetoothd already acknowledged): the no-reply flag is set
            // and no answer may be sent. Consuming the call lets the DBus module count it as answered, sending nothing.
            requestLogger?.debug("\(summary) (no reply expected)")
            call.reply()
            deliver(writes(nil))
        }
    }

    /// To the manager's router, on this loop thread (answered here when the handler can).
    private nonisolated func deliver(_ incoming: consuming IncomingRead) { router.read(incoming) }

    nonisolated func deliver(_ incoming: consuming IncomingWrites) { router.write(incoming) }

    /// The kind a subscription gets. bluetoothd does not tell the app whether the CCCD asked for notifications or
    /// indications; per device it sends what that device enabled. A characteristic that can notify is treated as
    /// notifying (an indication the manager waited on might never be confirmed); indicate-only waits for `Confirm`.
    static func updateKind(_ characteristic: Characteristic) -> UpdateKind {
        characteristic.properties.contains(.notify) ? .notification : .indication
    }

    private nonisolated func startNotify(_ call: consuming MethodCall, _ characteristic: Characteristic) {
        guard let call = owner.admit(call) else { return }
        call.reply()
        onLoop { $0.notifyStarted(characteristic) }
    }

    private func notifyStarted(_ characteristic: Characteristic) {
        // Every enabling CCCD write calls StartNotify (`ccc_write_cb`); only the first one subscribes.
        let kind = Self.updateKind(characteristic)
        let change = routes.withLock { $0.change { $0.started(characteristic.id, kind: kind) } }
        guard !change.effects.isEmpty else { return }
        logger.info("\(characteristic.id): StartNotify, updates go to every subscriber through PropertiesChanged")
        perform(change, changing: characteristic.id)
    }

    private nonisolated func stopNotify(_ call: consuming MethodCall, _ characteristic: Characteristic) {
        guard let call = owner.admit(call) else { return }
        call.reply()
        onLoop { $0.notifyStopped(characteristic) }
    }

    private func notifyStopped(_ characteristic: Characteristic) {
        // Called only when the last subscriber leaves (`ccc_write_cb`: ntfy_cnt drops to 0).
        let change = routes.withLock { $0.change { $0.stopped(characteristic.id) } }
        guard !change.effects.isEmpty else { return }
        logger.info("\(characteristic.id): StopNotify, no subscribers left")
        perform(change, changing: characteristic.id)
    }

    private nonisolated func confirm(_ call: consuming MethodCall, _ characteristic: Characteristic) {
        guard let call = owner.admit(call) else { return }
        call.reply()
        // `conf_cb`: one Confirm() per device that confirmed a PropertiesChanged indication, naming nobody.
        continuation.yield(.confirmed(Central(id: Central.allSubscribersID)))
    }

    private nonisolated func acquireNotify(_ call: consuming MethodCall, _ characteristic: Characteristic) {
        guard let call = owner.admit(call) else { return }
        let options = requestOptions(call)
        remember(options)
        let pair: (local: Int32, remote: Int32)
        do { pair = try AcquiredSocket.makePair() } catch {
            logger.error("AcquireNotify on \(characteristic.id): \(error)")
            call.fail(BlueZName.Error.failed, "\(error)")
            return
        }
        let id = characteristic.id
        let kind = Self.updateKind(characteristic)
        let connection = connection
        // The socket's events arrive on the loop thread; its central is looked up when something happens on it: a
        // `*` socket becomes its device's once bluetoothd shows it acquires per device (`NotifyTable`).
        let (change, isPerDevice) = onLoop { backend in
            let token = backend.routes.withLock { $0.reserveToken() }
            let socket = AcquiredSocket.forNotifications(
                fd: pair.local, on: connection,
                onWritable: { [weak backend] in backend?.onLoop { $0.notifySocketEvent(token) { .writable($0) } } },
                onConfirm: { [weak backend] in backend?.onLoop { $0.notifySocketEvent(token) { .confirmed($0) } } },
                onClosed: { [weak backend] in backend?.onLoop { $0.notifySocketClosed(token, id) } })
            return backend.routes.withLock { routes in
                let change = routes.change(adding: (token, socket)) {
                    $0.acquired(id, device: options.device, mtu: options.mtu, kind: kind, token: token)
                }
                return (change, routes.table.socketsArePerDevice)
            }
        }
        // Appending the fd duplicates it into the message; our copy of bluetoothd's end is closed right after.
        call.reply([.unixFD(UnixFD(pair.remote)), .uint16(UInt16(clamping: options.mtu))])
        _ = Glibc.close(pair.remote)
        logger.info(
            "\(id): AcquireNotify by \(options.device), MTU \(options.mtu); served as central '\(isPerDevice ? options.device : Central.allSubscribersID)'\(isPerDevice ? "" : " (all subscribers)")"
        )
        onLoop { $0.perform(change, changing: id) }
    }

    /// Reports what happened on the socket `token` as its central's event; nothing once the socket is gone.
    private func notifySocketEvent(_ token: Int, _ event: (Central) -> BackendEvent) {
        guard let central = routes.withLock({ $0.table.central(for: token) }) else { return }
        continuation.yield(event(central))
    }

    private func notifySocketClosed(_ token: Int, _ id: String) {
        let change = routes.withLock { $0.change { $0.closed(token: token) } }
        guard change.effects.contains(where: { if case .unsubscribed = $0 { true } else { false } }) else {
            perform(change, changing: nil)
            return
        }
        logger.info("\(id): bluetoothd closed a notify socket (its subscriber left)")
        perform(change, changing: id)
    }

    /// Carries out a change of `routes` made under its lock (so a manager told `.subscribed` can send at once, and
    /// no route reaches a socket let go): reports subscriptions in order, closes the sockets let go, and signals
    /// `Notifying` for `changing` (and every characteristic an effect names).
    func perform(_ change: (effects: [NotifyTable.Effect], closing: [AcquiredSocket]), changing id: String?) {
        var changed: [String] = id.map { [$0] } ?? []
        for effect in change.effects {
            switch effect {
            case .close:
                break
            case .subscribed(let central, let characteristicID, let kind):
                if !changed.contains(characteristicID) { changed.append(characteristicID) }
                continuation.yield(.subscribed(central, characteristicID: characteristicID, kind: kind))
            case .unsubscribed(let central, let characteristicID):
                if !changed.contains(characteristicID) { changed.append(characteristicID) }
                continuation.yield(.unsubscribed(central, characteristicID: characteristicID))
            }
        }
        for socket in change.closing { socket.close() }
        for characteristicID in changed { notifyingChanged(characteristicID) }
    }

    /// Emits `PropertiesChanged` for `Notifying` (and `NotifyAcquired` where exported); failures are logged.
    private func notifyingChanged(_ id: String) {
        guard let path = tree.characteristicPath(id) else { return }
        let (isNotifying, isAcquired) = routes.withLock { ($0.table.isNotifying(id), $0.table.isAcquired(id)) }
        var changed: [String: DBusValue] = [BlueZName.Property.notifying: .boolean(isNotifying)]
        if options.useAcquireNotify { changed[BlueZName.Property.notifyAcquired] = .boolean(isAcquired) }
        do {
            try connection.emitPropertiesChanged(
                path: path, interface: BlueZName.Interface.gattCharacteristic, changed: changed)
        } catch {
            logger.debug("PropertiesChanged for \(id) not sent: \(error)")
        }
    }

    /// Ends every subscription: their sockets close and the manager hears `.unsubscribed` for each. When
    /// bluetoothd itself went away, what it showed of its notify sockets is forgotten too: the next one may be
    /// another version.
    func forgetSubscriptions(reason: String, bluetoothdChanged: Bool = false) {
        let change = routes.withLock { $0.change { $0.removeAll(keepingWhatWasLearned: !bluetoothdChanged) } }
        for case .unsubscribed(_, let id) in change.effects { logger.info("\(id): subscription ended (\(reason))") }
        perform(change, changing: nil)
        closeWriteStreams(reason: reason)
    }

    // MARK: Descriptors

    /// Descriptors are answered here (`DescriptorValues`): the manager's request model covers characteristics only.
    private nonisolated func readDescriptor(_ call: consuming MethodCall, _ path: ObjectPath, _ descriptor: Descriptor)
    {
        guard let call = owner.admit(call) else { return }
        let options = requestOptions(call)
        remember(options)
        let summary = "read descriptor \(path) by \(options.device) offset \(options.offset)"
        switch onLoop({ $0.descriptors.read(descriptor, at: path, offset: options.offset) }) {
        case .success(let bytes):
            requestLogger?.debug("\(summary) -> \(bytes.count) bytes \(Self.hex(bytes))")
            call.reply([.bytes(bytes)])
        case .failure(let error):
            answer(call, summary, BlueZErrorReply(for: error, operation: .read))
        }
    }

    private nonisolated func writeDescriptor(_ call: consuming MethodCall, _ path: ObjectPath, _ descriptor: Descriptor)
    {
        guard let call = owner.admit(call) else { return }
        let (value, options) = writeArguments(call)
        remember(options)
        let summary = "write descriptor \(path) by \(options.device) offset \(options.offset) \(Self.hex(value))"
        let error = onLoop {
            $0.descriptors.write(
                value, to: descriptor, at: path, offset: options.offset, authorizingOnly: options.isPrepareAuthorize)
        }
        if let error { return answer(call, summary, BlueZErrorReply(for: error, operation: .write)) }
        requestLogger?.debug("\(summary) -> ok")
        call.reply()
    }

    private nonisolated func answer(_ call: consuming MethodCall, _ summary: String, _ reply: BlueZErrorReply) {
        requestLogger?.debug("\(summary) -> \(reply.deliveredError) as \(reply.name)")
        call.fail(reply.name, reply.message)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let shown = Hex.string(bytes.prefix(32), separator: "")
        return bytes.count > 32 ? shown + "…" : shown
    }
}

/// What a characteristic request was, for its log lines; formatted only when a line is written.
struct RequestSummary: CustomStringConvertible, Sendable {
    var operation: String
    var id: String
    var device: String
    var offset: Int
    var value: [UInt8]? = nil

    var description: String {
        let written = value.map { " " + BlueZBackend.hex($0) } ?? ""
        return "\(operation) \(id) by \(device) offset \(offset)\(written)"
    }
}
