import BlueZAgent
import BlueZModel
import DBus
@_spi(Backend) import Peripheral

// Which centrals are connected, from bluetoothd's Device1 objects under the adapter: bluetoothd creates one per
// remote device (InterfacesAdded) and flips its `Connected` (PropertiesChanged). 5.66 names nobody on the notify
// paths (every subscriber is the one central `*`, see BlueZBackend), but each connected device is still a
// central, as Core Bluetooth would list it: reads and writes name it (`device` option), and `blemu ctl centrals`
// shows it. A device's MTU is not a Device1 property, so its Central has the default until a request says more.
extension BlueZBackend {
    /// Subscribes to Device1 `PropertiesChanged` and `Disconnected` under the adapter, then reports the devices
    /// connected already; failures are logged (the backend then only learns centrals from their requests).
    func watchDevices() async {
        let rule = MatchRule(
            sender: BlueZName.service, pathNamespace: adapterPath, interface: BlueZName.FreeDesktop.properties,
            member: BlueZName.FreeDesktop.propertiesChanged, arg0: BlueZName.Interface.device)
        // Before 5.83 no Disconnected comes; the rule is harmless there.
        let reasons = MatchRule(
            sender: BlueZName.service, pathNamespace: adapterPath, interface: BlueZName.Interface.device,
            member: BlueZName.Signal.disconnected)
        do {
            // Signals arrive on the loop thread, this actor's executor.
            let subscription = try await connection.subscribe(rule) { [weak self] signal in
                self?.onLoop { $0.deviceSignal(signal) }
            }
            let reasonSubscription = try await connection.subscribe(reasons) { [weak self] signal in
                self?.onLoop { $0.disconnectSignal(signal) }
            }
            subscriptions += [subscription, reasonSubscription]
        } catch {
            logger.warning("cannot watch connected devices (\(rule)): \(error)")
            return
        }
        let objects: [(path: ObjectPath, interfaces: DBusValue)]
        do { objects = try await managedObjects() } catch {
            logger.warning("cannot list connected devices: \(error)")
            return
        }
        for object in objects { deviceAppeared(object.path, interfaces: object.interfaces) }
    }

    /// bluetoothd's object tree (`GetManagedObjects`): every object's path with its interfaces (`a{sa{sv}}`).
    func managedObjects() async throws(BlueZError) -> [(path: ObjectPath, interfaces: DBusValue)] {
        let reply = try await callBlueZ(
            BlueZName.root, BlueZName.FreeDesktop.objectManager, BlueZName.FreeDesktop.getManagedObjects, [],
            operation: BlueZName.FreeDesktop.getManagedObjects)
        return ((try? reply.first?.asEntries()) ?? []).compactMap { entry in
            guard case .objectPath(let path) = entry.key else { return nil }
            return (path, entry.value)
        }
    }

    /// Whether `interfaces` (`a{sa{sv}}`, from the tree or InterfacesAdded) hold a Device1 whose `Connected` is true.
    static func isConnectedDevice(_ interfaces: DBusValue) -> Bool {
        guard let entries = try? interfaces.asEntries(),
            let device = entries.first(where: { $0.key == .string(BlueZName.Interface.device) }),
            case .boolean(true)? = (try? device.value.asVardict())?[BlueZName.Property.connected]
        else { return false }
        return true
    }

    /// A Device1 `PropertiesChanged`: `Connected` true or false for a device of this adapter.
    private func deviceSignal(_ signal: Signal) {
        guard let sender = signal.sender, sender == owner.current, isDevice(signal.path), signal.arguments.count >= 2,
            let changed = try? signal.arguments[1].asVardict(),
            case .boolean(let isConnected)? = changed[BlueZName.Property.connected]
        else { return }
        deviceConnection(signal.path, isConnected: isConnected)
    }

    /// `Device1.Disconnected(reason, message)` (5.83+), for the `Connected` false that follows it.
    private func disconnectSignal(_ signal: Signal) {
        guard let sender = signal.sender, sender == owner.current, isDevice(signal.path), signal.arguments.count >= 2,
            case .string(let name) = signal.arguments[0], case .string(let message) = signal.arguments[1]
        else { return }
        devices.willDisconnect(signal.path, because: DisconnectReason(name: name, message: message))
    }

    /// An object from InterfacesAdded or GetManagedObjects (`interfaces`: `a{sa{sv}}`): a connected device of
    /// this adapter is a central that connected.
    func deviceAppeared(_ path: ObjectPath, interfaces: DBusValue) {
        guard isDevice(path), Self.isConnectedDevice(interfaces) else { return }
        deviceConnection(path, isConnected: true)
    }

    /// InterfacesRemoved of a device of this adapter: a connected one has gone.
    func deviceRemoved(_ path: ObjectPath, interfaces: [String]) {
        guard isDevice(path), interfaces.contains(BlueZName.Interface.device) else { return }
        deviceConnection(path, isConnected: false)
    }

    /// Reports a device's change of `Connected`, once (`DeviceTable`).
    private func deviceConnection(_ path: ObjectPath, isConnected: Bool) {
        guard let event = devices.connection(path, isConnected: isConnected) else { return }
        if case .disconnected(_, let reason) = event {
            logger.info("central \(path) disconnected\(reason.map { ": \($0)" } ?? "")")
        } else {
            logger.info("central \(path) connected")
        }
        continuation.yield(event)
    }

    /// Whether `path` is a device of this adapter: `/org/bluez/hci0/dev_...`, one level below it.
    nonisolated func isDevice(_ path: ObjectPath) -> Bool {
        let prefix = adapterPath.rawValue + "/dev_"
        return path.rawValue.hasPrefix(prefix) && !path.rawValue.dropFirst(prefix.count).contains("/")
    }
}
