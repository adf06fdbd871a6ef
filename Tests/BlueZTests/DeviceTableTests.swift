import DBus
@_spi(Backend) import Peripheral
import Testing

@testable import BlueZ

/// The adapter's devices as a value, with no bus: what bluetoothd's Device1 signals become for the manager.
@Suite struct DeviceTableTests {
    static let first = ObjectPath("/org/bluez/hci0/dev_11_22_33_44_55_01")
    static let second = ObjectPath("/org/bluez/hci0/dev_11_22_33_44_55_02")

    /// The event as a line: `BackendEvent` has no equality of its own.
    func line(_ event: BackendEvent?) -> String? {
        switch event {
        case .connected(let central)?: "connected \(central.id)"
        case .disconnected(let central, let reason)?: "disconnected \(central.id) \(reason?.name ?? "-")"
        case nil: nil
        default: "other"
        }
    }

    @Test func eachDeviceConnectsAndDisconnectsOnceHoweverOftenBluetoothdSaysSo() {
        var table = DeviceTable()
        // A restart's GetManagedObjects and the PropertiesChanged before it both say connected.
        #expect(line(table.connection(Self.first, isConnected: true)) == "connected \(Self.first.rawValue)")
        #expect(line(table.connection(Self.first, isConnected: true)) == nil)
        #expect(line(table.connection(Self.second, isConnected: true)) == "connected \(Self.second.rawValue)")
        #expect(line(table.connection(Self.first, isConnected: false)) == "disconnected \(Self.first.rawValue) -")
        #expect(line(table.connection(Self.first, isConnected: false)) == nil)
        #expect(table.connected == [Self.second])
    }

    @Test func aReasonExplainsOnlyTheDisconnectThatFollowsIt() {
        var table = DeviceTable()
        _ = table.connection(Self.first, isConnected: true)
        let remote = DisconnectReason(name: "org.bluez.Reason.Remote", message: "Connection terminated by remote user")
        table.willDisconnect(Self.first, because: remote)
        #expect(
            line(table.connection(Self.first, isConnected: false))
                == "disconnected \(Self.first.rawValue) org.bluez.Reason.Remote")
        // A reason for a device that then connects (it never went down) is dropped with that change.
        table.willDisconnect(Self.second, because: remote)
        _ = table.connection(Self.second, isConnected: true)
        #expect(
            line(table.connection(Self.second, isConnected: false)) == "disconnected \(Self.second.rawValue) -")
    }

    @Test func forgettingConnectionsReportsNothing() {
        var table = DeviceTable()
        _ = table.connection(Self.first, isConnected: true)
        table.forgetConnections()
        #expect(table.connected.isEmpty)
        // After bluetoothd returns, the same device connecting is news again.
        #expect(line(table.connection(Self.first, isConnected: true)) == "connected \(Self.first.rawValue)")
    }
}
