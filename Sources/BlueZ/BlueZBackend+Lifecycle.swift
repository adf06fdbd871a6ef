import DBus
import GATTModel
import Logging
import Peripheral

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
                member: "PropertiesChanged", arg0: BlueZName.Interface.adapter),
            MatchRule(
                sender: BlueZName.service, interface: BlueZName.FreeDesktop.objectManager, member: "InterfacesAdded"),
            MatchRule(
                sender: BlueZName.service, interface: BlueZName.FreeDesktop.objectManager, member: "InterfacesRemoved"),
        ]
        for rule in rules {
            do {
                let subscription = try await connection.subscribe(rule) { [weak self] signal in
                    self?.adapterSignal(signal)
                }
                state.withLock { $0.subscriptions.append(subscription) }
            } catch {
                logger.warning("cannot watch the adapter (\(rule)): \(error)")
            }
        }
    }

    private func adapterSignal(_ signal: Signal) {
        // The bus matches the well-known name; locally, the sender must still be bluetoothd's current unique name.
        guard let sender = signal.sender, sender == owner.current else { return }
        switch signal.member {
        case "PropertiesChanged":
            guard signal.path == adapterPath, signal.arguments.count >= 2,
                let changed = try? signal.arguments[1].asVardict(),
                case .boolean(let powered)? = changed[BlueZName.Property.powered]
            else { return }
            poweredChanged(powered)
        case "InterfacesAdded":
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
            state.withLock {
                $0.adapterPresent = true; $0.isPowered = powered
            }
            Task { await self.registerAgain(reason: "adapter \(self.adapterName) appeared") }
        case "InterfacesRemoved":
            if signal.arguments.count == 2, case .objectPath(let path) = signal.arguments[0], path != adapterPath {
                deviceRemoved(path, interfaces: (try? signal.arguments[1].asStrings()) ?? [])
                return
            }
            guard signal.arguments.count == 2, signal.arguments[0] == .objectPath(adapterPath),
                let names = try? signal.arguments[1].asStrings(), names.contains(BlueZName.Interface.adapter)
            else { return }
            logger.warning("adapter \(adapterName) was removed: its registrations are gone")
            registrationsLost(reason: "adapter \(adapterName) removed")
            state.withLock {
                $0.adapterPresent = false; $0.isPowered = false
            }
            continuation.yield(.stateChanged(.unsupported))
        default:
            return
        }
    }

    /// Power off keeps the GATT application and the advertisement's registration, but not the advertisement on the
    /// air: at power off the kernel clears the controller's advertising sets (MGMT Advertising Removed), which 5.66
    /// ignores (src/advertising.c registers no handler for it), and nothing adds them back at power on. Seen in the
    /// lab: ActiveInstances stays 1 and no central finds the peripheral. So at power on the advertisement is
    /// registered again.
    private func poweredChanged(_ powered: Bool) {
        let changed = state.withLock { state -> Bool in
            defer { state.isPowered = powered }
            return state.isPowered != powered
        }
        guard changed else { return }
        logger.info("adapter \(adapterName) powered \(powered ? "on" : "off")")
        if !powered {
            forgetSubscriptions(reason: "adapter powered off")
            forgetDevices()
        }
        continuation.yield(.stateChanged(powered ? .poweredOn : .poweredOff))
        if powered { Task { await self.registerAdvertisementAfterPowerOn() } }
    }

    /// Unregisters and registers the advertisement, so that bluetoothd adds it to the controller again.
    private func registerAdvertisementAfterPowerOn() async {
        await gate.serially { () async in
            guard !state.withLock({ $0.isShutDown || $0.advertisement == nil }), owner.current != nil else { return }
            await withdrawAdvertisement()
            do {
                try await registerAdvertisement()
                logger.info("advertisement registered again after power on (bluetoothd does not restore it)")
            } catch {
                logger.error("advertisement not registered again after power on: \(error)")
                continuation.yield(.advertisingStopped(reason: "not registered again after power on: \(error)"))
            }
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
        state.withLock { $0.watcher = task }
    }

    private func ownerChanged(to newOwner: String?) async {
        let previous = owner.current
        guard newOwner != previous else { return }
        if previous != nil {
            owner.update(nil)
            logger.warning("bluetoothd (\(previous ?? "")) left the bus: its registrations are gone")
            registrationsLost(reason: "bluetoothd left", bluetoothdChanged: true)
            continuation.yield(.stateChanged(.resetting))
        }
        guard let newOwner else { return }
        owner.update(newOwner)
        logger.info("bluetoothd is back as \(newOwner)")
        guard let powered = await adapterPowered() else {
            logger.warning("bluetoothd has no adapter \(adapterName)")
            state.withLock { $0.adapterPresent = false }
            continuation.yield(.stateChanged(.unsupported))
            return
        }
        state.withLock {
            $0.adapterPresent = true; $0.isPowered = powered
        }
        await registerAgain(reason: "bluetoothd restarted")
    }

    /// Marks every registration as gone (bluetoothd forgot them) and ends the subscriptions.
    private func registrationsLost(reason: String, bluetoothdChanged: Bool = false) {
        state.withLock { state in
            state.isApplicationRegistered = false
            state.isAdvertisementRegistered = false
            state.isAgentRegistered = false
        }
        forgetSubscriptions(reason: reason, bluetoothdChanged: bluetoothdChanged)
        forgetDevices()
    }

    /// Registers what bluetoothd lost (application, advertisement, agent and alias), then reports the adapter's
    /// state. Idempotent: a restart announces itself twice (the name's new owner, then InterfacesAdded for the
    /// adapter), and registering twice would only earn AlreadyExists.
    func registerAgain(reason: String) async {
        await gate.serially { () async in
            let (isShutDown, agent, application, advertisement) = state.withLock {
                ($0.isShutDown, !$0.isAgentRegistered, !$0.isApplicationRegistered, !$0.isAdvertisementRegistered)
            }
            guard !isShutDown else { return }
            let powered = state.withLock { $0.isPowered }
            guard agent || application || advertisement else {
                logger.debug("nothing to register again (\(reason))")
                continuation.yield(.stateChanged(powered ? .poweredOn : .poweredOff))
                return
            }
            if agent { await registerAgentAndAlias() }
            if application {
                do { try await registerApplication() } catch {
                    logger.error("application not registered again: \(error)")
                }
            }
            if advertisement {
                do { try await registerAdvertisement() } catch {
                    logger.error("advertisement not registered again: \(error)")
                }
            }
            logger.info("registered the application, advertisement and agent again (\(reason))")
            continuation.yield(.stateChanged(state.withLock { $0.isPowered } ? .poweredOn : .poweredOff))
        }
    }
}
