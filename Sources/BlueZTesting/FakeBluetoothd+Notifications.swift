// The simulated central's subscriptions and what reaches it, as bluetoothd 5.66 does them: a test subscribes a
// central to the app's characteristic and awaits `FakeCentral.notifications` (FakeBluetoothd+Central.swift has its
// connections and reads, FakeBluetoothd+Writes.swift its writes).
import DBus
import GATTModel

#if canImport(Glibc)
import Glibc
#endif

extension FakeBluetoothd {
    // MARK: Subscriptions (`ccc_write_cb`, `acquire_notify_reply`)

    /// Writes 1 (notifications) or 2 (indications) to the characteristic's CCCD. Returns the ATT error, if any.
    /// Unlike 5.66, which answers the CCCD write before AcquireNotify returns, this waits for the fd, so a test
    /// can notify at once. 5.66 would also call AcquireNotify twice if a second device subscribed meanwhile.
    public func subscribe(
        _ attribute: AttributeReference, indications: Bool = false, by central: FakeCentral
    ) async -> ATTError? {
        await beginRequest(central)
        defer { endRequest(central) }
        guard var device = devices[central.path] else { return .unlikelyError }
        guard let found = find(attribute), let characteristic = found.characteristic, characteristic.hasCCCD else {
            return .invalidHandle
        }
        // `database_add_ccc`: the CCCD is always readable and writable, plus the `*-notify`/`*-indicate` levels.
        let cccPermissions = characteristic.parsed.cccPermissions.union([.read, .write])
        if let error = FakeATT.check(cccPermissions, for: .write, at: device.security) { return error }
        let value: UInt16 = indications ? 2 : 1
        let properties = characteristic.parsed.properties
        if (value == 1 && !properties.contains(.notify)) || (value == 2 && !properties.contains(.indicate)) {
            return .cccdImproperlyConfigured
        }
        // gatt-db calls the CCC callback only when the device's value changes.
        let previous = device.cccValues[found.path] ?? 0
        device.cccValues[found.path] = value
        devices[central.path] = device
        if previous != 0 { return nil }
        var state = notifyStates[found.path] ?? NotifyState()
        if state.reader != nil {
            state.count += 1
            notifyStates[found.path] = state
            return nil
        }
        if characteristic.offersAcquireNotify {
            let options = acquireOptions(for: device, central.path)
            do {
                let reply = try await callApp(
                    found.owner, found.path, found.interface, "AcquireNotify", [options])
                if reply.count == 2, case .unixFD(let fd) = reply[0], case .uint16 = reply[1] {
                    let path = found.path
                    var state = notifyStates[found.path] ?? NotifyState()
                    state.reader = NotifyReader(fd: fd.rawValue, isHeld: notifySocketsHeld) { [weak self] datagram in
                        await self?.valueChanged(path, datagram)
                    }
                    state.count += 1
                    notifyStates[found.path] = state
                    return nil
                }
            } catch let error as DBusError
                where error.name == StandardErrorName.noReply || error.name == BlueZ566.Error.failed
            {
                // `acquire_notify_reply` gives up on NoReply and Failed: no count, no StartNotify.
                return nil
            } catch {}
            // Any other error or a malformed reply: the `retry` label, StartNotify.
        }
        callAppWithoutReply(found.owner, found.path, found.interface, "StartNotify")
        var fallback = notifyStates[found.path] ?? NotifyState()
        fallback.count += 1
        notifyStates[found.path] = fallback
        return nil
    }

    /// Writes 0 to the CCCD: the count drops; at 0 the fd is closed (fd path) or StopNotify called.
    public func unsubscribe(_ attribute: AttributeReference, by central: FakeCentral) -> ATTError? {
        guard let found = find(attribute), found.characteristic?.hasCCCD == true else { return .invalidHandle }
        guard devices[central.path]?.cccValues.removeValue(forKey: found.path) != nil else { return nil }
        disable(found.path)
        return nil
    }

    func disable(_ path: ObjectPath) {
        guard var state = notifyStates[path], state.count > 0 else { return }
        state.count -= 1
        notifyStates[path] = state
        guard state.count == 0 else { return }
        if let reader = state.reader {
            reader.stop()
            notifyStates[path]?.reader = nil
            return
        }
        guard let owner = owner(of: path) else { return }
        callAppWithoutReply(owner, path, BlueZ566.Interface.gattCharacteristic, "StopNotify")
    }

    /// Stops reading every notify socket, as a busy bluetoothd main loop would: the app's end fills up and its
    /// sends would block. Sockets acquired meanwhile start held too.
    public func holdNotifySockets() {
        notifySocketsHeld = true
        for state in notifyStates.values { state.reader?.hold() }
    }

    /// Reads the notify sockets again; what was written meanwhile goes out in order.
    public func releaseNotifySockets() {
        notifySocketsHeld = false
        for state in notifyStates.values { state.reader?.release() }
    }

    /// How many subscriptions bluetoothd counts for a characteristic (`ntfy_cnt`), and whether it holds an fd.
    public func notifyCount(_ attribute: AttributeReference) -> (count: UInt32, hasFD: Bool) {
        guard let path = find(attribute)?.path, let state = notifyStates[path] else { return (0, false) }
        return (state.count, state.reader != nil)
    }

    // MARK: Delivery (`send_notification_to_devices`, `conf_cb`)

    /// A new value from PropertiesChanged or a datagram from the fd: every device whose CCCD is set gets it,
    /// cut to MTU-3, as a notification or an indication by its own CCCD value.
    func valueChanged(_ path: ObjectPath, _ value: [UInt8]) {
        for (devicePath, device) in devices {
            guard let ccc = device.cccValues[path] else { continue }
            let notification = FakeNotification(
                characteristic: path, value: Array(value.prefix(512).prefix(Int(device.mtu) - 3)),
                isIndication: ccc == 2)
            if notification.isIndication {
                indicate(notification, to: devicePath)
            } else {
                device.continuation.yield(notification)
            }
        }
    }

    func indicate(_ indication: FakeNotification, to devicePath: ObjectPath) {
        guard var device = devices[devicePath] else { return }
        if device.awaitingConfirmation != nil {
            device.heldIndications.append(indication)
            devices[devicePath] = device
            return
        }
        device.awaitingConfirmation = indication
        devices[devicePath] = device
        device.continuation.yield(indication)
        if device.confirmsIndications { confirmIndication(at: devicePath) }
    }

    /// The central confirms the outstanding indication: the app gets `Confirm()` (no reply expected), and the
    /// next held indication goes out. For centrals connected with `confirmsIndications: false`.
    public func confirmIndication(from central: FakeCentral) { confirmIndication(at: central.path) }

    func confirmIndication(at devicePath: ObjectPath) {
        guard var device = devices[devicePath], let confirmed = device.awaitingConfirmation else { return }
        device.awaitingConfirmation = nil
        let next = device.heldIndications.isEmpty ? nil : device.heldIndications.removeFirst()
        devices[devicePath] = device
        if let owner = owner(of: confirmed.characteristic) {
            callAppWithoutReply(owner, confirmed.characteristic, BlueZ566.Interface.gattCharacteristic, "Confirm")
        }
        if let next { indicate(next, to: devicePath) }
    }
}
