import DBus
@_spi(Backend) import Peripheral

/// The adapter's devices as bluetoothd shows them: which are connected and why one is about to disconnect. A value
/// with no I/O, as `NotifyTable` and `BlueZLifecycle` are: `BlueZBackend` feeds it the Device1 signals and sends on
/// the events it returns (DeviceTableTests drives it with no bus).
struct DeviceTable: Sendable, Equatable {
    /// Devices whose `Connected` is true, each reported once as a central.
    private(set) var connected: Set<ObjectPath> = []
    /// Why a device's link went down, from `Device1.Disconnected` (5.83+), until its `Connected` turns false.
    private var reasons: [ObjectPath: DisconnectReason] = [:]

    /// `Device1.Disconnected(reason, message)`: kept for the `Connected` false that follows it (src/device.c
    /// `device_disconnected` sends the signal, then the property).
    mutating func willDisconnect(_ path: ObjectPath, because reason: DisconnectReason) {
        reasons[path] = reason
    }

    /// A device's `Connected` as bluetoothd now reports it; returns the event to report, or nil when nothing changed
    /// (a device already known connected does not connect again). A disconnect takes the reason left for it; a
    /// reason is never kept past the change it explains.
    mutating func connection(_ path: ObjectPath, isConnected: Bool) -> BackendEvent? {
        let reason = reasons.removeValue(forKey: path)
        let changed = isConnected ? connected.insert(path).inserted : connected.remove(path) != nil
        guard changed else { return nil }
        let central = Central(id: path.rawValue)
        return isConnected ? .connected(central) : .disconnected(central, reason: reason)
    }

    /// Forgets the connected devices without an event: the manager ends every central itself when the adapter goes
    /// away or bluetoothd leaves.
    mutating func forgetConnections() {
        connected.removeAll()
    }
}
