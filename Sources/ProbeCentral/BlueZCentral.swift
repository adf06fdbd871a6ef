import BlueZAgent
import BlueZModel
import DBus
import FoundationEssentials
import GATTModel
import Logging

/// A BLE central built on bluetoothd's D-Bus client API (docs/lab.md: the fastest, most deterministic central):
/// discover, connect, walk the GATT tree, read everything readable, listen to everything that notifies, disconnect.
///
/// Owns its bus connection; `probe` runs once per value and closes nothing, so call `close()` when done.
public struct BlueZCentral: Sendable {
    private let connection: BusConnection
    private let logger: Logger

    /// Connects to `bus`; throws `ProbeError.busUnavailable` when the bus cannot be reached.
    public init(bus: BusAddress, logger: Logger) throws(ProbeError) {
        do {
            connection = try BusConnection(bus, logger: logger)
        } catch {
            throw .busUnavailable(error.description)
        }
        self.logger = logger
    }

    /// Closes the bus connection.
    public func close() { connection.close() }

    /// Runs the whole probe and returns its report. Throws `ProbeError` for every failure (see its cases for the
    /// exit codes); read, subscribe and write errors are not failures: they are recorded in the report.
    ///
    /// `plan`, when given, is asked after listening for the writes to make, from the report so far (`blemu verify
    /// --writes`: `ProfileVerifier.writes`); they are made in order before disconnecting, and recorded in `writes`.
    public func probe(
        _ request: ProbeRequest, writing plan: (@Sendable (ProbeReport) -> [ProbeWrite])? = nil
    ) async throws(ProbeError) -> ProbeReport {
        do {
            return try await run(request, writing: plan)
        } catch let error as ProbeError {
            throw error
        } catch let error as DBusError {
            throw .unexpectedReply(error.description)
        } catch {
            throw .unexpectedReply("\(error)")
        }
    }

    private func run(
        _ request: ProbeRequest, writing plan: (@Sendable (ProbeReport) -> [ProbeWrite])?
    ) async throws -> ProbeReport {
        let clock = ContinuousClock()
        let start = clock.now
        func seconds() -> Double { Self.seconds(start.duration(to: clock.now)) }

        guard let owner = try await connection.nameOwner(BlueZName.service) else {
            throw ProbeError.bluetoothdNotRunning
        }
        // Subscribe before the first GetManagedObjects so nothing falls between the snapshot and the signals.
        let mirror = ObjectMirror()
        let subscription = try await connection.subscribe(MatchRule(sender: owner)) { mirror.apply($0) }
        defer { subscription.cancel() }
        try await refresh(mirror)

        let adapterPath = try chooseAdapter(request.adapter, in: mirror.objects)
        let adapterName = adapterPath.rawValue.split(separator: "/").last.map(String.init) ?? adapterPath.rawValue
        logger.debug("using adapter", metadata: ["adapter": "\(adapterName)"])
        try await powerOn(adapterPath, mirror: mirror, timeout: request.timeout)

        let matches = Self.matcher(for: request, adapter: adapterPath)
        try await call(
            adapterPath, BlueZName.Interface.adapter, BlueZName.Member.setDiscoveryFilter,
            [.vardict([BlueZName.DiscoveryFilter.transport: .string(BlueZName.DiscoveryFilter.transportLE)])])
        let found = try await discover(on: adapterPath, mirror: mirror, timeout: request.timeout) { objects in
            objects.keys.sorted().first { matches($0, objects[$0] ?? [:]) }
        }
        if request.waitsForName, let found, !Self.hasName(found, in: mirror.objects) {
            // Found by its advertisement before its scan response (the name often rides there, Core Bluetooth's
            // budget puts it there when it does not fit): a scan that heard one packet and not the other may not
            // ask again for the same device, so a new scan does (`discover` restarts it every `rescanInterval`).
            logger.debug("found without its name: scanning again for the scan response")
            _ = try? await call(adapterPath, BlueZName.Interface.adapter, BlueZName.Member.stopDiscovery)
            // The device is found: a scan that cannot start again (the adapter busy) costs the name, not the probe.
            _ = try? await discover(on: adapterPath, mirror: mirror, timeout: Self.nameWait) { objects in
                Self.hasName(found, in: objects) ? true : nil
            }
        }
        // bluetoothd recommends no discovery while connecting (device-api.txt, Connect); errors here are harmless.
        _ = try? await call(adapterPath, BlueZName.Interface.adapter, BlueZName.Member.stopDiscovery)
        guard let devicePath = found else {
            throw ProbeError.notFound(
                target: request.targetDescription, seconds: request.timeout.components.seconds,
                seen: Self.seenDevices(on: adapterPath, in: mirror.objects))
        }
        let timeFound = seconds()
        // The scan's view (RSSI above all) before connecting changes it.
        let scanned = mirror.objects[devicePath]?[BlueZName.Interface.device] ?? [:]
        let isPaired = {
            Self.bool(mirror.objects[devicePath]?[BlueZName.Interface.device]?[BlueZName.Property.paired]) == true
        }
        let pairedBefore = isPaired()
        logger.debug("found", metadata: ["device": "\(devicePath)"])

        if let pairing = request.pairing {
            try await pair(devicePath, settings: pairing, owner: owner, mirror: mirror, timeout: request.timeout)
        } else {
            try await connect(devicePath, mirror: mirror, timeout: request.timeout)
        }
        let timeConnected = seconds()
        let resolved = await mirror.wait(upTo: request.timeout) { objects in
            Self.bool(objects[devicePath]?[BlueZName.Interface.device]?[BlueZName.Property.servicesResolved])
                == true ? true : nil
        }
        guard resolved == true else {
            _ = try? await call(devicePath, BlueZName.Interface.device, BlueZName.Member.disconnect)
            throw ProbeError.connectFailed(
                "services of \(devicePath) not resolved within \(request.timeout.components.seconds) s")
        }
        let timeResolved = seconds()
        // A disconnection before this link (someone else's, or a stale one) is not this link dropping.
        mirror.watchLink(of: devicePath)
        try await refresh(mirror)

        var (services, reads) = try await readTree(of: devicePath, mirror: mirror)
        let pairing = ProbePairing(requested: request.pairing != nil, before: pairedBefore, afterReads: isPaired())
        let isDown: @Sendable (ManagedObjects) -> Bool = { objects in
            Self.bool(objects[devicePath]?[BlueZName.Interface.device]?[BlueZName.Property.connected]) == false
        }
        func linkDropped() -> Bool { mirror.hasDisconnected(devicePath) || isDown(mirror.objects) }
        if reads.unexplained > 0 && !linkDropped() {
            // A read that failed without an ATT error may be the link going: bluetoothd fails the pending reads and
            // reports Connected from two sources (the ATT socket, the management event) in either order.
            _ = await mirror.wait(upTo: .seconds(1)) { isDown($0) ? true : nil }
        }
        var linkLoss: ProbeLinkLoss?
        if linkDropped() {
            linkLoss = ProbeLinkLoss(phase: .reading, readsDone: reads.done, readsSkipped: reads.skipped)
        } else {
            services = try await listen(services, mirror: mirror, for: request.listen, isPaired: isPaired)
            if linkDropped() {
                linkLoss = ProbeLinkLoss(phase: .listening, readsDone: reads.done, readsSkipped: 0)
            }
        }
        let device = Self.device(devicePath, scanned: scanned, now: mirror.objects[devicePath] ?? [:])
        var report = ProbeReport(
            adapter: adapterName, device: device, services: services, listenSeconds: Self.seconds(request.listen),
            timings: ProbeTimings(found: timeFound, connected: timeConnected, resolved: timeResolved, total: 0),
            linkLoss: linkLoss)
        report.pairing = pairing
        if let plan, linkLoss == nil {
            report.writes = await write(plan(report), mirror: mirror, isPaired: isPaired, linkDropped: linkDropped)
            if linkDropped() {
                report.linkLoss = ProbeLinkLoss(phase: .writing, readsDone: reads.done, readsSkipped: 0)
            }
        }
        _ = try? await call(devicePath, BlueZName.Interface.device, BlueZName.Member.disconnect)
        report.timings.total = seconds()
        return report
    }

    // MARK: Steps

    /// Loads a fresh GetManagedObjects snapshot into the mirror.
    private func refresh(_ mirror: ObjectMirror) async throws {
        let reply = try await connection.call(
            BlueZName.service, path: .root, interface: BlueZName.FreeDesktop.objectManager,
            member: BlueZName.FreeDesktop.getManagedObjects)
        guard let first = reply.first else { throw ProbeError.unexpectedReply("GetManagedObjects returned nothing") }
        mirror.load(try ObjectMirror.managedObjects(first))
    }

    /// The named adapter's path, or the first (by path) without active advertisements.
    private func chooseAdapter(_ name: String?, in objects: ManagedObjects) throws -> ObjectPath {
        let adapters = objects.keys.filter { objects[$0]?[BlueZName.Interface.adapter] != nil }.sorted()
        if adapters.isEmpty { throw ProbeError.noAdapter("bluetoothd has no adapter") }
        if let name {
            guard let path = adapters.first(where: { $0.rawValue.hasSuffix("/" + name) }) else {
                let names = adapters.map { $0.rawValue.split(separator: "/").last.map(String.init) ?? "" }
                throw ProbeError.noAdapter("no adapter \(name); bluetoothd has \(names.joined(separator: ", "))")
            }
            return path
        }
        let idle = adapters.first { path in
            let instances = objects[path]?[BlueZName.Interface.advertisingManager]?[
                BlueZName.Property.activeInstances]
            return (try? instances?.asByte()) ?? 0 == 0
        }
        guard let idle else { throw ProbeError.noAdapter("every adapter is advertising; name one with --adapter") }
        return idle
    }

    /// Sets Powered when it is off and waits for bluetoothd to report it on.
    private func powerOn(_ adapter: ObjectPath, mirror: ObjectMirror, timeout: Duration) async throws {
        let isPowered: @Sendable (ManagedObjects) -> Bool? = { objects in
            Self.bool(objects[adapter]?[BlueZName.Interface.adapter]?[BlueZName.Property.powered]) == true
                ? true : nil
        }
        if isPowered(mirror.objects) == true { return }
        _ = try await connection.call(
            BlueZName.service, path: adapter, interface: BlueZName.FreeDesktop.properties,
            member: BlueZName.FreeDesktop.set,
            arguments: [
                .string(BlueZName.Interface.adapter), .string(BlueZName.Property.powered), .variant(.boolean(true)),
            ])
        guard await mirror.wait(upTo: timeout, for: isPowered) == true else {
            throw ProbeError.noAdapter("\(adapter) did not power on within \(timeout.components.seconds) s")
        }
    }

    /// Connects unless already connected; bluetoothd's refusal becomes `connectFailed`.
    private func connect(_ device: ObjectPath, mirror: ObjectMirror, timeout: Duration) async throws {
        let connected = Self.bool(mirror.objects[device]?[BlueZName.Interface.device]?[BlueZName.Property.connected])
        if connected == true { return }
        do {
            _ = try await connection.call(
                BlueZName.service, path: device, interface: BlueZName.Interface.device,
                member: BlueZName.Member.connect, timeout: timeout)
        } catch let error as DBusError where error.name == BlueZName.Error.alreadyConnected {
            return
        } catch let error as DBusError {
            throw ProbeError.connectFailed("Connect to \(device) failed: \(error.description)")
        }
    }

    /// Pairs with `Device1.Pair`, which connects first (5.66 src/device.c pair_device), answering bluetoothd through
    /// blemu's pairing agent (the one `blemu run` registers) for this call only: bluetoothd asks the agent of
    /// the caller of Pair (adapter_create_bonding keeps it), so no default agent is touched. A device already
    /// paired is only connected.
    private func pair(
        _ device: ObjectPath, settings: PairingSettings, owner: String, mirror: ObjectMirror, timeout: Duration
    ) async throws {
        if Self.bool(mirror.objects[device]?[BlueZName.Interface.device]?[BlueZName.Property.paired]) == true {
            return try await connect(device, mirror: mirror, timeout: timeout)
        }
        let agent: ObjectPath = "/org/blemu/probe/agent"
        let check = OwnerCheck(owner: owner, logger: logger)
        try connection.export(agent, [PairingAgent.interface(settings, owner: check, logger: logger)])
        defer { connection.unexport(agent) }
        let manager = ObjectPath(stringLiteral: BlueZName.agentManagerPath)
        try await call(
            manager, BlueZName.Interface.agentManager, BlueZName.Member.registerAgent,
            [.objectPath(agent), .string(BlueZName.capability(settings.ioCapability))])
        let outcome: Result<Void, ProbeError>
        do {
            _ = try await connection.call(
                BlueZName.service, path: device, interface: BlueZName.Interface.device, member: BlueZName.Member.pair,
                timeout: timeout)
            outcome = .success(())
        } catch let error as DBusError where error.name == BlueZName.Error.alreadyExists {
            outcome = .success(())
        } catch let error as DBusError {
            outcome = .failure(.pairingFailed("Pair with \(device) failed: \(error.description)"))
        }
        // A failure here only means bluetoothd already forgot the agent.
        _ = try? await call(
            manager, BlueZName.Interface.agentManager, BlueZName.Member.unregisterAgent, [.objectPath(agent)])
        try outcome.get()
        try await connect(device, mirror: mirror, timeout: timeout)
    }

    /// Builds the GATT tree under `device` and reads every readable characteristic and every descriptor, until
    /// the link drops: the reads after that are not tried (each would only wait for bluetoothd's "Not connected").
    private func readTree(
        of device: ObjectPath, mirror: ObjectMirror
    ) async throws -> ([ProbeService], reads: (done: Int, skipped: Int, unexplained: Int)) {
        let objects = mirror.objects
        var reads = (done: 0, skipped: 0, unexplained: 0)
        func read(_ path: ObjectPath, _ interface: String, uuid: String) async -> ProbeRead? {
            guard !mirror.hasDisconnected(device) else {
                reads.skipped += 1
                return nil
            }
            reads.done += 1
            let result = await self.read(path, interface, uuid: uuid)
            if let failure = result.failure, failure.attError == nil { reads.unexplained += 1 }
            return result
        }
        func children(_ interface: String, _ parentKey: String, of parent: ObjectPath) -> [ObjectPath] {
            objects.keys.filter { path in
                (try? objects[path]?[interface]?[parentKey]?.asObjectPath()) == parent
            }.sorted()
        }
        var services: [ProbeService] = []
        for servicePath in children(BlueZName.Interface.gattService, BlueZName.Property.device, of: device) {
            let service = objects[servicePath]?[BlueZName.Interface.gattService] ?? [:]
            var characteristics: [ProbeCharacteristic] = []
            for path in children(
                BlueZName.Interface.gattCharacteristic, BlueZName.Property.service, of: servicePath)
            {
                let properties = objects[path]?[BlueZName.Interface.gattCharacteristic] ?? [:]
                let uuid = Self.shortUUID(properties[BlueZName.Property.uuid])
                let flags = (try? properties[BlueZName.Property.flags]?.asStrings()) ?? []
                var descriptors: [ProbeDescriptor] = []
                for descriptorPath in children(
                    BlueZName.Interface.gattDescriptor, BlueZName.Property.characteristic, of: path)
                {
                    let descriptorUUID = Self.shortUUID(
                        objects[descriptorPath]?[BlueZName.Interface.gattDescriptor]?[BlueZName.Property.uuid])
                    descriptors.append(
                        ProbeDescriptor(
                            uuid: descriptorUUID, name: Self.name(of: descriptorUUID), path: descriptorPath.rawValue,
                            read: await read(descriptorPath, BlueZName.Interface.gattDescriptor, uuid: descriptorUUID)))
                }
                var characteristic = ProbeCharacteristic(
                    uuid: uuid, name: Self.name(of: uuid), flags: flags, path: path.rawValue, read: nil,
                    notifications: [], descriptors: descriptors)
                if characteristic.canRead {
                    characteristic.read = await read(path, BlueZName.Interface.gattCharacteristic, uuid: uuid)
                }
                characteristics.append(characteristic)
            }
            let uuid = Self.shortUUID(service[BlueZName.Property.uuid])
            services.append(
                ProbeService(
                    uuid: uuid, name: Self.name(of: uuid),
                    isPrimary: Self.bool(service[BlueZName.Property.primary]) ?? true, path: servicePath.rawValue,
                    characteristics: characteristics))
        }
        return (services, reads)
    }

    /// One `ReadValue({})`; an error reply is recorded, not thrown.
    private func read(_ path: ObjectPath, _ interface: String, uuid: String) async -> ProbeRead {
        do {
            let reply = try await connection.call(
                BlueZName.service, path: path, interface: interface, member: BlueZName.Member.readValue,
                arguments: [.vardict([:])])
            let bytes = try reply.first?.asBytes() ?? []
            return .value(ProbeValue(bytes: bytes, uuid: uuid))
        } catch let error as DBusError {
            return .failure(ProbeFailure(name: error.name, message: error.message))
        } catch {
            return .failure(ProbeFailure(name: "blemu.UnexpectedReply", message: "\(error)"))
        }
    }

    /// Subscribes to every characteristic that notifies or indicates, collects for `duration`, unsubscribes. The
    /// pairing state around each StartNotify tells a subscription the device refused for want of pairing (and
    /// bluetoothd's client paired for) from one it allowed on a link that was never paired.
    private func listen(
        _ services: [ProbeService], mirror: ObjectMirror, for duration: Duration, isPaired: () -> Bool
    ) async throws -> [ProbeService] {
        var services = services
        let start = ContinuousClock.now
        var subscribed: [ObjectPath] = []
        for s in services.indices {
            for c in services[s].characteristics.indices where services[s].characteristics[c].canSubscribe {
                let path = ObjectPath(stringLiteral: services[s].characteristics[c].path)
                // Listening starts before StartNotify: a notification may arrive before its reply does.
                mirror.listen(to: path, since: start)
                let pairedBefore = isPaired()
                defer {
                    services[s].characteristics[c].subscribePairing = ProbePairingAround(
                        before: pairedBefore, after: isPaired())
                }
                do {
                    try await call(path, BlueZName.Interface.gattCharacteristic, BlueZName.Member.startNotify)
                    subscribed.append(path)
                } catch let error as DBusError {
                    services[s].characteristics[c].subscribeError = ProbeFailure(
                        name: error.name, message: error.message)
                }
            }
        }
        // The listening window itself: notifications are collected by the mirror meanwhile.
        if !subscribed.isEmpty { try await Task.sleep(for: duration) }
        let received = mirror.takeNotifications()
        for path in subscribed {
            _ = try? await call(path, BlueZName.Interface.gattCharacteristic, BlueZName.Member.stopNotify)
        }
        for s in services.indices {
            for c in services[s].characteristics.indices {
                let characteristic = services[s].characteristics[c]
                let values = received[ObjectPath(stringLiteral: characteristic.path)] ?? []
                services[s].characteristics[c].notifications = values.map {
                    ProbeValue(bytes: $0.bytes, uuid: characteristic.uuid, at: Self.seconds($0.at))
                }
            }
        }
        return services
    }

    /// Makes the planned writes in order, each `WriteValue` with its type, and the read after each accepted one
    /// that asks for it; what the plan marks not made, and everything once the link is gone, is not sent.
    ///
    /// An `exchange` subscribes to what it listens to (once, before the first that needs it; unsubscribed after the
    /// last write), then records what arrives from the write until every expected value has, in order (or its wait
    /// is over), and a quiet moment more for values the profile does not declare.
    private func write(
        _ plan: [ProbeWrite], mirror: ObjectMirror, isPaired: () -> Bool, linkDropped: () -> Bool
    ) async -> [ProbeWrite] {
        var writes = plan
        var subscribed: [ObjectPath] = []
        // Which characteristic each listened path is, from every exchange's own and expected values.
        var names: [ObjectPath: String] = [:]
        for write in writes {
            names[ObjectPath(stringLiteral: write.path)] = write.characteristic
            for update in write.expects ?? [] { names[ObjectPath(stringLiteral: update.path)] = update.characteristic }
        }
        for index in writes.indices where writes[index].outcome == nil {
            guard !linkDropped() else {
                writes[index].outcome = .notMade("the link dropped first")
                continue
            }
            let listens = (writes[index].listens ?? []).map { ObjectPath(stringLiteral: $0) }
            for path in listens where !subscribed.contains(path) {
                // A subscription refused shows in the verification as the values not heard.
                do {
                    try await call(path, BlueZName.Interface.gattCharacteristic, BlueZName.Member.startNotify)
                    subscribed.append(path)
                } catch {}
            }
            let listenedSince = ContinuousClock.now
            _ = mirror.takeNotifications()
            for path in listens { mirror.listen(to: path, since: listenedSince) }
            let path = ObjectPath(stringLiteral: writes[index].path)
            let type = writes[index].withResponse ? BlueZName.WriteType.request : BlueZName.WriteType.command
            let pairedBefore = isPaired()
            defer {
                if writes[index].purpose == .guarded {
                    writes[index].pairing = ProbePairingAround(before: pairedBefore, after: isPaired())
                }
            }
            do {
                try await call(
                    path, BlueZName.Interface.gattCharacteristic, BlueZName.Member.writeValue,
                    [.bytes(writes[index].bytes), .vardict([BlueZName.WriteType.option: .string(type)])])
                writes[index].outcome = .accepted
            } catch let error as DBusError {
                writes[index].outcome = .refused(ProbeFailure(name: error.name, message: error.message))
            } catch {
                writes[index].outcome = .refused(ProbeFailure(name: "blemu.UnexpectedReply", message: "\(error)"))
            }
            if writes[index].outcome == .accepted, writes[index].readsBack != nil, !linkDropped() {
                writes[index].readBack = await read(path, BlueZName.Interface.gattCharacteristic, uuid: "")
            }
            if case .exchange = writes[index].purpose {
                var expected: [ObjectPath: [[UInt8]]] = [:]
                if writes[index].outcome == .accepted {
                    for update in writes[index].expects ?? [] {
                        expected[ObjectPath(stringLiteral: update.path), default: []].append(
                            Hex.bytes(update.hex) ?? [])
                    }
                }
                let waits = Duration.milliseconds(writes[index].waitMilliseconds ?? 0)
                _ = await mirror.waitForNotifications(expected, upTo: waits + Self.exchangeWait)
                try? await Task.sleep(for: Self.exchangeQuiet)
                let heard = mirror.takeNotifications().flatMap { path, values in
                    values.map {
                        (
                            at: $0.at,
                            update: ProbeWrite.Update(
                                characteristic: names[path] ?? path.rawValue, path: path.rawValue, bytes: $0.bytes)
                        )
                    }
                }
                writes[index].heard = heard.sorted { $0.at < $1.at }.map(\.update)
            }
        }
        // Unsubscribing is tidying up: a refusal changes nothing the verification reports.
        for path in subscribed {
            _ = try? await call(path, BlueZName.Interface.gattCharacteristic, BlueZName.Member.stopNotify)
        }
        return writes
    }

    /// How long an exchange waits for the values its answer sends, past the case's own `wait`s.
    static let exchangeWait: Duration = .seconds(3)

    /// How long an exchange listens on once its values have come, for any the profile does not declare.
    static let exchangeQuiet: Duration = .milliseconds(300)

    /// How long one discovery runs without finding the device before it is started again.
    static let rescanInterval: Duration = .seconds(4)

    /// How long a probe that wants the device's name (`ProbeRequest.waitsForName`) scans on for it once the device
    /// is found without one: three scans; a device whose name never comes is reported by its alias, as before.
    static let nameWait: Duration = .seconds(12)

    /// Whether bluetoothd has the device's advertised name (Device1 `Name`, set from a Complete or Shortened Local
    /// Name AD structure; `Alias` falls back to the address without one).
    static func hasName(_ path: ObjectPath, in objects: ManagedObjects) -> Bool {
        objects[path]?[BlueZName.Interface.device]?[BlueZName.Property.name] != nil
    }

    /// Discovers until `find` matches or `timeout` ends, starting the discovery again every `rescanInterval`.
    ///
    /// Why again: the kernel reports a device found in the first moments of a discovery before it completes the
    /// Start Discovery command (btmon, kernel 7.2), and bluetoothd drops that report because it marks the adapter
    /// discovering only when the command completes (src/adapter.c `btd_adapter_device_found`, in 5.66
    /// `btd_adapter_update_found_device`, returns while `!adapter->discovering`, which `start_discovery_complete`
    /// sets). A controller filtering duplicates does not report the device again in that scan: seen in the lab as a
    /// probe finding nothing in 15 s of a peripheral a second central found at once. A new discovery starts a new
    /// scan when the probe is the adapter's only discovery client; beside another client's, bluetoothd keeps the
    /// running scan (`update_discovery_filter`), and the restart costs nothing.
    private func discover<T: Sendable>(
        on adapterPath: ObjectPath, mirror: ObjectMirror, timeout: Duration,
        find: @escaping @Sendable (ManagedObjects) -> T?
    ) async throws -> T? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var ours = true
        do {
            try await call(adapterPath, BlueZName.Interface.adapter, BlueZName.Member.startDiscovery)
        } catch let error as DBusError where error.name == BlueZName.Error.inProgress {
            // This connection's own discovery is already running or starting (src/adapter.c `start_discovery`
            // answers InProgress only to the same sender): it serves, and it is not ours to restart.
            ours = false
        }
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            let wait = ours ? min(left, Self.rescanInterval) : left
            if let found = await mirror.wait(upTo: wait, for: find) { return found }
            guard ours, ContinuousClock.now < deadline else { return nil }
            logger.debug("nothing found yet: discovering again")
            // A stop that fails (no discovery left after a failed start) must not keep the next start from running.
            _ = try? await call(adapterPath, BlueZName.Interface.adapter, BlueZName.Member.stopDiscovery)
            do {
                try await call(adapterPath, BlueZName.Interface.adapter, BlueZName.Member.startDiscovery)
            } catch {
                // bluetoothd may be busy with the adapter (a power change): the next round tries again.
                logger.debug("discovering again failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Calls a method on bluetoothd with its default timeout.
    private func call(
        _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    ) async throws {
        _ = try await connection.call(
            BlueZName.service, path: path, interface: interface, member: member, arguments: arguments)
    }

    // MARK: Reading properties

    /// `name` without leading and trailing spaces, as bluetoothd 5.84+ reports names.
    static func trimmingSpaces(_ name: String) -> String {
        String(name.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }

    /// A predicate matching the request's device on `adapter`.
    static func matcher(
        for request: ProbeRequest, adapter: ObjectPath
    ) -> @Sendable (ObjectPath, [String: [String: DBusValue]]) -> Bool {
        let address = request.address?.uppercased()
        let service = request.service.flatMap(BluetoothUUID.init)
        // bluetoothd 5.84+ strips leading and trailing spaces from every name it receives (src/eir.c name2utf8,
        // 218db700f): a name advertised with a trailing space is `Name` without it there, so names are compared as
        // that bluetoothd reports them.
        let name = request.name.map(Self.trimmingSpaces)
        return { _, interfaces in
            guard let device = interfaces[BlueZName.Interface.device],
                (try? device[BlueZName.Property.adapter]?.asObjectPath()) == adapter
            else { return false }
            if let address, (try? device[BlueZName.Property.address]?.asString())?.uppercased() != address {
                return false
            }
            if let name {
                let names = [BlueZName.Property.name, BlueZName.Property.alias].compactMap {
                    (try? device[$0]?.asString()).map(Self.trimmingSpaces)
                }
                if !names.contains(name) { return false }
            }
            if let service {
                let uuids = ((try? device[BlueZName.Property.uuids]?.asStrings()) ?? []).compactMap(BluetoothUUID.init)
                if !uuids.contains(service) { return false }
            }
            return true
        }
    }

    /// The LE devices `adapter` knows, for a not-found message: `00:AA:01:00:00:01 "Thermostat" (RSSI -60)`,
    /// strongest first, at most ten.
    static func seenDevices(on adapter: ObjectPath, in objects: ManagedObjects) -> [String] {
        let devices = objects.values.compactMap { interfaces -> (text: String, rssi: Int)? in
            guard let device = interfaces[BlueZName.Interface.device],
                (try? device[BlueZName.Property.adapter]?.asObjectPath()) == adapter,
                let address = try? device[BlueZName.Property.address]?.asString()
            else { return nil }
            let name = (try? device[BlueZName.Property.name]?.asString()).map { " \"\($0)\"" } ?? ""
            let rssi = reportedRSSI(try? device[BlueZName.Property.rssi]?.asInt16())
            return (address + name + (rssi.map { " (RSSI \($0))" } ?? ""), rssi ?? .min)
        }
        let sorted = devices.sorted { ($0.rssi, $1.text) > ($1.rssi, $0.text) }
        return sorted.prefix(10).map(\.text) + (sorted.count > 10 ? ["\(sorted.count - 10) more"] : [])
    }

    /// The report's device from its Device1 properties at discovery (`scanned`) and now.
    static func device(
        _ path: ObjectPath, scanned: [String: DBusValue], now: [String: [String: DBusValue]]
    )
        -> ProbeDevice
    {
        // The scan's values win: once connected, bluetoothd replaces Name with the GAP Device Name it read and
        // UUIDs with the resolved services, and the report's device is what the scan saw.
        let current = (now[BlueZName.Interface.device] ?? [:]).merging(scanned) { _, scan in scan }
        func string(_ key: String) -> String? { try? current[key]?.asString() }
        let rssi = reportedRSSI(try? current[BlueZName.Property.rssi]?.asInt16())
        let uuids = ((try? scanned[BlueZName.Property.uuids]?.asStrings()) ?? []).map { shortUUID(.string($0)) }
        return ProbeDevice(
            path: path.rawValue, address: string(BlueZName.Property.address) ?? "",
            addressType: string(BlueZName.Property.addressType),
            name: string(BlueZName.Property.name) ?? string(BlueZName.Property.alias),
            rssi: rssi, uuids: uuids,
            manufacturerData: advertisedData(scanned[BlueZName.Property.manufacturerData]) { key in
                (try? key.asUInt16()).map(Hex.word)
            },
            serviceData: advertisedData(scanned[BlueZName.Property.serviceData]) { shortUUID($0) },
            appearance: (try? scanned[BlueZName.Property.appearance]?.asUInt16()).map(Int.init),
            txPower: (try? scanned[BlueZName.Property.txPower]?.asInt16()).map(Int.init))
    }

    /// Device1 `ManufacturerData` (`a{qv}`) or `ServiceData` (`a{sv}`): hex values by `key`'s spelling; nil when
    /// absent or empty.
    static func advertisedData(_ value: DBusValue?, key: (DBusValue) -> String?) -> [String: String]? {
        guard let entries = try? value?.asEntries() else { return nil }
        var data: [String: String] = [:]
        for entry in entries {
            guard let name = key(entry.key), let bytes = try? entry.value.asVariant().asBytes() else { continue }
            data[name] = bytes.map(Hex.byte).joined()
        }
        return data.isEmpty ? nil : data
    }

    /// The RSSI to report: 127 means "not available" (Core Spec Vol 4, Part E, 7.7.65.2, LE Advertising Report:
    /// RSSI 127), which btvirt's controllers send and bluetoothd passes on as it is, so it is no RSSI at all.
    static func reportedRSSI(_ raw: Int16?) -> Int? {
        guard let raw, raw != 127 else { return nil }
        return Int(raw)
    }

    /// A `UUID` property in its shortest form ("180D"); the raw text when it does not parse.
    static func shortUUID(_ value: DBusValue?) -> String {
        guard let text = try? value?.asString() else { return "?" }
        return BluetoothUUID(text)?.description ?? text
    }

    /// The SIG name of a short UUID, nil for custom ones.
    static func name(of uuid: String) -> String? { BluetoothUUID(uuid)?.assignedName }

    /// A boolean property; nil when absent or not a boolean.
    static func bool(_ value: DBusValue?) -> Bool? { try? value?.asBool() }

    /// Seconds as a Double with millisecond precision.
    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return (Double(seconds) + Double(attoseconds / 1_000_000_000_000_000) / 1000)
    }
}
