import BlueZAgent
import BlueZModel
import DBus
import GATTModel
import Logging
@_spi(Backend) import Peripheral

// Surviving bluetoothd (docs/bluez.md, "Links, power and restarts"): its restarts drop every registration, adapters
// come and go through ObjectManager signals, and `Powered` changes arrive as PropertiesChanged.
extension BlueZBackend {
    /// The adapter's `Powered` from bluetoothd's object tree, or nil when bluetoothd has no such adapter (or
    /// cannot be asked).
    func adapterPowered() async -> Bool? {
        let objects: [(path: ObjectPath, interfaces: DBusValue)]
        do { objects = try await managedObjects() } catch {
            logger.warning("cannot list bluetoothd's objects: \(error)")
            return nil
        }
        guard let object = objects.first(where: { $0.path == adapterPath }) else { return nil }
        guard let interfaces = try? object.interfaces.asEntries(),
            let adapter = interfaces.first(where: { $0.key == .string(BlueZName.Interface.adapter) }),
            let properties = try? adapter.value.asVardict()
        else { return nil }
        if case .boolean(let powered)? = properties[BlueZName.Property.powered] { return powered }
        return false
    }

    /// Subscribes to the adapter's PropertiesChanged and to InterfacesAdded/Removed; failures are logged (the
    /// backend then misses power changes but still works).
    func watchAdapter() async {
        let rules = [
            MatchRule(
                sender: BlueZName.service, path: adapterPath, interface: BlueZName.FreeDesktop.properties,
                member: BlueZName.FreeDesktop.propertiesChanged, arg0: BlueZName.Interface.adapter),
            MatchRule(
                sender: BlueZName.service, interface: BlueZName.FreeDesktop.objectManager,
                member: BlueZName.FreeDesktop.interfacesAdded),
            MatchRule(
                sender: BlueZName.service, interface: BlueZName.FreeDesktop.objectManager,
                member: BlueZName.FreeDesktop.interfacesRemoved),
        ]
        for rule in rules {
            do {
                // Signals arrive on the loop thread, this actor's executor.
                let subscription = try await connection.subscribe(rule) { [weak self] signal in
                    self?.onLoop { $0.adapterSignal(signal) }
                }
                subscriptions.append(subscription)
            } catch {
                logger.warning("cannot watch the adapter (\(rule)): \(error)")
            }
        }
    }

    private func adapterSignal(_ signal: Signal) {
        // The bus matches the well-known name; locally, the sender must still be bluetoothd's current unique name.
        guard let sender = signal.sender, sender == owner.current else { return }
        switch signal.member {
        case BlueZName.FreeDesktop.propertiesChanged:
            guard signal.path == adapterPath, signal.arguments.count >= 2,
                let changed = try? signal.arguments[1].asVardict(),
                case .boolean(let powered)? = changed[BlueZName.Property.powered]
            else { return }
            poweredChanged(powered)
        case BlueZName.FreeDesktop.interfacesAdded:
            if signal.arguments.count == 2, case .objectPath(let path) = signal.arguments[0], path != adapterPath {
                deviceAppeared(path, interfaces: signal.arguments[1])
                return
            }
            guard signal.arguments.count == 2, signal.arguments[0] == .objectPath(adapterPath),
                let interfaces = try? signal.arguments[1].asEntries(),
                let adapter = interfaces.first(where: { $0.key == .string(BlueZName.Interface.adapter) })
            else { return }
            var powered = false
            if case .boolean(let value)? = (try? adapter.value.asVardict())?[BlueZName.Property.powered] {
                powered = value
            }
            logger.info("adapter \(adapterName) appeared: registering again")
            adapterSignals += 1
            handle(.adapterAdded(powered: powered))
        case BlueZName.FreeDesktop.interfacesRemoved:
            if signal.arguments.count == 2, case .objectPath(let path) = signal.arguments[0], path != adapterPath {
                deviceRemoved(path, interfaces: (try? signal.arguments[1].asStrings()) ?? [])
                return
            }
            guard signal.arguments.count == 2, signal.arguments[0] == .objectPath(adapterPath),
                let names = try? signal.arguments[1].asStrings(), names.contains(BlueZName.Interface.adapter)
            else { return }
            logger.warning("adapter \(adapterName) was removed: its registrations are gone")
            adapterSignals += 1
            handle(.adapterRemoved)
        default:
            return
        }
    }

    /// Power off keeps the GATT application and the advertisement's registration, but not the advertisement on the
    /// air: at power off the kernel clears the controller's advertising sets (MGMT Advertising Removed), which 5.66
    /// ignores (src/advertising.c registers no handler for it), and nothing adds them back at power on. Seen in the
    /// lab: ActiveInstances stays 1 and no central finds the peripheral. So at power on the machine asks for the
    /// advertisement to be registered again (`.refreshAdvertisement`).
    private func poweredChanged(_ powered: Bool) {
        adapterSignals += 1
        let changed = lifecycle.adapterPowered != powered
        if changed { logger.info("adapter \(adapterName) powered \(powered ? "on" : "off")") }
        handle(.powered(powered))
    }

    /// Feeds the lifecycle machine one event and performs what it returns, in order.
    func handle(_ event: BlueZLifecycle.Event) {
        let actions = lifecycle.handle(event)
        for action in actions {
            switch action {
            case .report(let state):
                continuation.yield(.stateChanged(state))
            case .forgetLinks(let reason, let bluetoothdChanged):
                forgetSubscriptions(reason: reason, bluetoothdChanged: bluetoothdChanged)
                devices.forgetConnections()
            case .registerAgain(let reason):
                // Both await bluetoothd, and this may be the loop thread that brings its replies: queued.
                jobs.yield(RegistrationJob.Queued(job: .registerAgain(reason: reason)))
            case .refreshAdvertisement:
                jobs.yield(RegistrationJob.Queued(job: .refreshAdvertisement))
            }
        }
    }

    /// Unregisters and registers the advertisement, so that bluetoothd adds it to the controller again; the worker's
    /// (`RegistrationJob.refreshAdvertisement`).
    func registerAdvertisementAfterPowerOn() async {
        guard !lifecycle.isShutDown, advertisement != nil, owner.current != nil else { return }
        await withdrawAdvertisement()
        do {
            try await registerAdvertisement()
            logger.info("advertisement registered again after power on (bluetoothd does not restore it)")
        } catch {
            logger.error("advertisement not registered again after power on: \(error)")
            continuation.yield(.advertisingStopped(reason: "not registered again after power on: \(error)"))
        }
    }

    /// Follows the owner of `org.bluez`: on loss, `.resetting` and every subscription ends; on return, the
    /// application, advertisement and agent are registered again, then the adapter's state is reported.
    func startWatchingOwner() {
        let task = Task { [weak self, connection] in
            let changes: AsyncStream<String?>
            do { changes = try await connection.nameOwnerChanges(of: BlueZName.service) } catch {
                self?.logger.warning("cannot watch bluetoothd restarts: \(error)")
                return
            }
            for await newOwner in changes {
                guard let self else { return }
                await self.ownerChanged(to: newOwner)
            }
        }
        watcher = task
    }

    private func ownerChanged(to newOwner: String?) async {
        let previous = owner.current
        guard newOwner != previous else { return }
        if previous != nil {
            owner.update(nil)
            logger.warning("bluetoothd (\(previous ?? "")) left the bus: its registrations are gone")
            handle(.bluetoothdLeft)
        }
        guard let newOwner else { return }
        owner.update(newOwner)
        logger.info("bluetoothd is back as \(newOwner)")
        let signalsBefore = adapterSignals
        var powered = await adapterPowered()
        // The answer can be older than a signal that overtook it: a new bluetoothd adds and powers its adapter
        // while the question is in flight, and a stale "off" then hid the power on, reported poweredOff to a
        // powered adapter and swallowed the next real power off (seen in the lab on 5.87, kernel 7.2). What a
        // later signal said wins.
        if adapterSignals != signalsBefore { powered = lifecycle.adapterPowered }
        if powered == nil { logger.warning("bluetoothd has no adapter \(adapterName)") }
        handle(.bluetoothdArrived(adapterPowered: powered))
    }

    /// Registers what the lifecycle says is missing (agent and alias, application, advertisement), then reports the
    /// adapter's state. Idempotent: a restart announces itself twice (the name's new owner, then InterfacesAdded for
    /// the adapter), and the second pass finds nothing missing. The worker's (`RegistrationJob.registerAgain`).
    func registerAgain(reason: String) async {
        guard !lifecycle.isShutDown else { return }
        let missing = lifecycle.missing
        if missing.isEmpty { logger.debug("nothing to register again (\(reason))") }
        for registration in missing {
            switch registration {
            case .agent:
                await registerAgentAndAlias()
            case .application:
                do { try await registerApplication() } catch {
                    logger.error("application not registered again: \(error)")
                }
            case .advertisement:
                do { try await registerAdvertisement() } catch {
                    logger.error("advertisement not registered again: \(error)")
                }
            }
        }
        if !missing.isEmpty {
            logger.info("registered \(missing.map { "\($0)" }.joined(separator: ", ")) again (\(reason))")
        }
        continuation.yield(.stateChanged(lifecycle.reportedState))
    }
}
