import GATTModel
import Peripheral

/// A small device with one characteristic per situation the tests tell a story about.
enum Fixture {
    static let name = Characteristic(
        id: "name", uuid: BluetoothUUID(0x2A00), properties: [.read], value: .cached(Array("blemu".utf8)))
    static let setting = Characteristic(
        id: "setting", uuid: BluetoothUUID(0xFF01), properties: [.read, .write, .writeWithoutResponse],
        value: .dynamic([0]), maximumLength: 8)
    static let command = Characteristic(
        id: "command", uuid: BluetoothUUID(0xFF02), properties: [.write], value: .dynamic([]))
    static let secret = Characteristic(
        id: "secret", uuid: BluetoothUUID(0xFF03), properties: [.read, .write],
        permissions: [.readEncryptionRequired, .writeEncryptionRequired], value: .dynamic([42]))
    static let pin = Characteristic(
        id: "pin", uuid: BluetoothUUID(0xFF04), properties: [.read],
        security: SecurityRequirements([.read: .authenticated]), value: .dynamic([1, 2, 3, 4]))
    static let log = Characteristic(
        id: "log", uuid: BluetoothUUID(0xFF05), properties: [.read, .write, .reliableWrite],
        value: .dynamic((0..<100).map { UInt8($0) }), maximumLength: 200)
    static let heartRate = Characteristic(
        id: "hr", uuid: BluetoothUUID(0x2A37), properties: [.notify], value: .dynamic([0, 60]))
    static let alert = Characteristic(
        id: "alert", uuid: BluetoothUUID(0xFF06), properties: [.indicate], value: .dynamic([]))
    static let privateHeartRate = Characteristic(
        id: "private-hr", uuid: BluetoothUUID(0xFF07), properties: [.notify, .notifyEncryptionRequired],
        value: .dynamic([]))

    static let service = Service(
        id: "device", uuid: BluetoothUUID(0xFF00),
        characteristics: [name, setting, command, secret, pin, log, heartRate, alert, privateHeartRate])
}

extension PeripheralEvent {
    /// Whether this is a subscription to the characteristic with `id`.
    func isSubscription(to id: String) -> Bool {
        if case .subscribed(_, let characteristic) = self { return characteristic.id == id }
        return false
    }
}
