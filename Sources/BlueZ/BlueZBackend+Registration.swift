import BlueZAgent
import BlueZModel
import DBus
import GATTModel
import Logging
@_spi(Backend) import Peripheral

// Registering with bluetoothd (docs/bluez.md, "Registration"): the application, the advertisement and the agent,
// each made and withdrawn here; `BlueZLifecycle` says when.
extension BlueZBackend {
    /// Replaces the exported tree with `services` and registers it (unregistering the old one first): bluetoothd
    /// cannot extend a registered application (docs/bluez.md, "Registration"). The worker's (`RegistrationJob`).
    func applyTree(_ services: [Service]) async throws(BlueZError) {
        guard !lifecycle.isShutDown else { throw .shutDown }
        if lifecycle.isRegistered(.application) { await unregister(.application) }
        forgetSubscriptions(reason: "the application is registered again")
        for path in tree.exported { connection.unexport(path) }
        let objects = GATTApplication.objects(
            for: services, paths: paths, options: options, handlers: handlers())
        do {
            for object in objects { try connection.export(object.path, object.interfaces) }
        } catch {
            for object in objects { connection.unexport(object.path) }
            tree = PublishedTree()
            handle(.unwant(.application))
            throw .export("\(error)")
        }
        tree = PublishedTree(services, exported: objects.map(\.path), paths: paths)
        descriptors.reset()
        handle(services.isEmpty ? .unwant(.application) : .want(.application))
        try await registerApplication()
    }

    /// `GattManager1.RegisterApplication(root, {})`: bluetoothd calls GetManagedObjects back before answering.
    func registerApplication() async throws(BlueZError) {
        guard !tree.services.isEmpty, owner.current != nil else { return }
        let generation = lifecycle.generation
        let root = paths.root
        _ = try await callBlueZ(
            adapterPath, BlueZName.Interface.gattManager, BlueZName.Member.registerApplication,
            [.objectPath(root), .vardict([:])], operation: "RegisterApplication")
        handle(.registered(.application, generation: generation))
        logger.info("registered the GATT application \(root) on \(adapterName)")
    }

    /// Exports the planned advertisement and registers it with `LEAdvertisingManager1`.
    func registerAdvertisement() async throws(BlueZError) {
        let generation = lifecycle.generation
        guard let registration = advertisement, owner.current != nil else { return }
        let path = paths.advertisement
        connection.unexport(path)
        do {
            try connection.export(
                path,
                [
                    // `Release` is a bus call: it arrives on the loop thread, this actor's executor.
                    AdvertisementExport.interface(registration, owner: owner) { [weak self] in
                        self?.onLoop { $0.advertisementReleased() }
                    }
                ])
        } catch { throw .export("\(error)") }
        do {
            _ = try await callBlueZ(
                adapterPath, BlueZName.Interface.advertisingManager, BlueZName.Member.registerAdvertisement,
                [.objectPath(path), .vardict([:])], operation: "RegisterAdvertisement")
        } catch {
            connection.unexport(path)
            throw error
        }
        handle(.registered(.advertisement, generation: generation))
        logger.info("registered the advertisement \(path) on \(adapterName)")
    }

    /// Unregisters (if registered) and unexports the advertisement; failures are logged.
    func withdrawAdvertisement() async {
        if lifecycle.isRegistered(.advertisement) { await unregister(.advertisement) }
        connection.unexport(paths.advertisement)
    }

    /// Asks bluetoothd to forget one registration and tells the lifecycle (which ignores it after shutdown); a
    /// failure is logged, since bluetoothd may be gone already.
    func unregister(_ registration: BlueZLifecycle.Registration) async {
        switch registration {
        case .agent:
            await callLogged(
                BlueZName.agentManager, BlueZName.Interface.agentManager, BlueZName.Member.unregisterAgent,
                [.objectPath(paths.agent)])
        case .application:
            await callLogged(
                adapterPath, BlueZName.Interface.gattManager, BlueZName.Member.unregisterApplication,
                [.objectPath(paths.root)])
        case .advertisement:
            await callLogged(
                adapterPath, BlueZName.Interface.advertisingManager, BlueZName.Member.unregisterAdvertisement,
                [.objectPath(paths.advertisement)])
        }
        handle(.unregistered(registration))
    }

    /// 5.66 calls `Release` only when an advertisement's `Timeout` ends (blemu sets none) or when its adapter's
    /// advertising manager goes: the adapter was removed or bluetoothd is exiting (src/advertising.c
    /// `client_timeout`, `manager_destroy`). The registration is kept and made again when the adapter or bluetoothd
    /// returns, so advertising has not stopped for the app: the state changes that follow say what happened.
    private func advertisementReleased() {
        handle(.unregistered(.advertisement))
        logger.warning("bluetoothd released the advertisement (its adapter is going away); registering it again later")
    }

    /// Registers the agent as the default and sets the alias; each failure is logged, not thrown: a machine
    /// without an agent still serves unencrypted attributes.
    func registerAgentAndAlias() async {
        let agent = paths.agent
        let capability = BlueZName.capability(options.pairing.ioCapability)
        let generation = lifecycle.generation
        do {
            _ = try await callBlueZ(
                BlueZName.agentManager, BlueZName.Interface.agentManager,
                BlueZName.Member.registerAgent,
                [.objectPath(agent), .string(capability)], operation: "RegisterAgent")
            handle(.registered(.agent, generation: generation))
            _ = try await callBlueZ(
                BlueZName.agentManager, BlueZName.Interface.agentManager,
                BlueZName.Member.requestDefaultAgent,
                [.objectPath(agent)], operation: "RequestDefaultAgent")
            logger.info("registered the pairing agent \(agent) (\(capability))")
        } catch {
            logger.warning("pairing agent not registered: \(error)")
        }
        guard let name = options.deviceName else { return }
        if previousAlias == nil {
            do {
                let reply = try await callBlueZ(
                    adapterPath, BlueZName.FreeDesktop.properties, BlueZName.FreeDesktop.get,
                    [.string(BlueZName.Interface.adapter), .string(BlueZName.Property.alias)], operation: "Get Alias")
                if case .variant(.string(let alias))? = reply.first { previousAlias = alias }
            } catch {
                logger.warning("cannot read the adapter's Alias: \(error)")
            }
        }
        await setAlias(name)
    }

    func setAlias(_ alias: String) async {
        do {
            _ = try await callBlueZ(
                adapterPath, BlueZName.FreeDesktop.properties, BlueZName.FreeDesktop.set,
                [.string(BlueZName.Interface.adapter), .string(BlueZName.Property.alias), .variant(.string(alias))],
                operation: "Set Alias")
            logger.info("adapter \(adapterName) Alias is '\(alias)'")
        } catch {
            logger.warning("cannot set the adapter's Alias: \(error)")
        }
    }

    // MARK: Calls to bluetoothd

    /// Calls bluetoothd; its error replies become `.rejected`, a lost connection `.unavailable`.
    func callBlueZ(
        _ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue], operation: String
    ) async throws(BlueZError) -> [DBusValue] {
        do {
            return try await connection.call(
                BlueZName.service, path: path, interface: interface, member: member, arguments: arguments)
        } catch let error as DBusError {
            throw .rejected(operation: operation, error)
        } catch {
            throw .rejected(operation: operation, DBusError(name: StandardErrorName.failed, message: "\(error)"))
        }
    }

    /// A best-effort call (unregistering on the way out): failures are logged at debug level.
    func callLogged(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue]) async {
        do { _ = try await callBlueZ(path, interface, member, arguments, operation: member) } catch {
            logger.debug("\(error)")
        }
    }
}
