import BlueZModel
import DBus
@_spi(Backend) import Peripheral

// Dropping links (the `disconnect` fault). bluetoothd owns the LE links; an application can only ask it to end one
// with `Device1.Disconnect`, which 5.66 answers once the link is down (src/device.c `dev_disconnect` ->
// `device_request_disconnect`; the reply waits in `device->disconnects` until `device_remove_connection`, forced
// after DISCONNECT_TIMER, 2 s) and answers at once when the device is not connected.
extension BlueZBackend {
    /// Calls `Device1.Disconnect` on `central`'s device, or on every connected device of the adapter when `central`
    /// is nil or `Central.allSubscribersID` (5.66 names no single subscriber). Returns the device paths whose
    /// disconnection bluetoothd confirmed; throws `.rejected` when every call failed.
    @_spi(Backend) public func disconnect(_ central: Central?) async throws -> [String] {
        let targets: [String]
        if let central, central.id != Central.allSubscribersID {
            targets = [central.id]
        } else {
            targets = await devicesToDisconnect()
        }
        var disconnected: [String] = []
        var lastError: BlueZError?
        for device in targets {
            guard let path = try? ObjectPath(validating: device) else {
                logger.warning("cannot disconnect '\(device)': not a device path")
                continue
            }
            do {
                _ = try await callBlueZ(
                    path, BlueZName.Interface.device, BlueZName.Member.disconnect, [], operation: "Disconnect \(device)"
                )
                logger.info("disconnected \(device)")
                disconnected.append(device)
            } catch {
                logger.warning("\(error)")
                lastError = error
            }
        }
        if disconnected.isEmpty, let lastError { throw lastError }
        return disconnected
    }

    /// The adapter's devices whose `Connected` is true in bluetoothd's object tree, asked afresh rather than taken
    /// from the Device1 watch (BlueZBackend+Devices.swift), which may have missed a signal: every central, also
    /// those that subscribed through `StartNotify` (which names no device) and never read or wrote. When the tree
    /// cannot be read, the devices named in requests and `AcquireNotify` stand in.
    func devicesToDisconnect() async -> [String] {
        let known = namedDevices.withLock { $0.all }
        do {
            return try await managedObjects().filter { isDevice($0.path) && Self.isConnectedDevice($0.interfaces) }
                .map(\.path.rawValue).sorted()
        } catch {
            logger.warning("cannot list bluetoothd's devices, disconnecting those seen in requests: \(error)")
            return known.sorted()
        }
    }
}
