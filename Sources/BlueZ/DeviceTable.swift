import DBus
@_spi(Backend) import Peripheral

/// The adapter's devices as bluetoothd shows them: which are connected, why one is about to disconnect, and which
/// any request has named. A value with no I/O, as `NotifyTable` and `BlueZLifecycle` are: `BlueZBackend` feeds it
/// the Device1 signals and the requests' `device` option and sends on the events it returns (DeviceTableTests
/// drives it with no bus).
struct DeviceTable: Sendable, Equatable {
    /// Devices whose `Connected` is true, each reported once as a central.
    private(set) var connected: Set<ObjectPath> = []
    /// Why a device's link went down, from `Device1.Disconnected` (5.83+), until its `Connected` turns false.
    private var reasons: [ObjectPath: DisconnectReason] = [:]
    /// Device paths bluetoothd named in requests and subscriptions (the `device` option): the centrals met so far,
    /// for `disconnect` when bluetoothd's object tree cannot be read.
    private(set) var named: Set<String> = []

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

    /// Remembers a device a request named.
    mutating func name(_ device: String) {
        named.insert(device)
    }
}
