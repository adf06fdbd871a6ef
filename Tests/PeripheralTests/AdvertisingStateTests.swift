import GATTModel
import Peripheral
import PeripheralTesting
import Testing

/// `isAdvertising` follows the stack: off the air while powered off, back on when the stack resumes it.
@Suite struct AdvertisingStateTests {
    let service = Service(
        id: "battery", uuid: BluetoothUUID(0x180F),
        characteristics: [Characteristic(id: "level", uuid: BluetoothUUID(0x2A19), properties: [.read])])

    @Test func advertisingResumesAfterAPowerCycle() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [service])
        try await manager.startAdvertising(Advertisement(localName: "Battery"))
        backend.setState(.poweredOff)
        #expect(await manager.nextEvent { if case .stateChanged(.poweredOff) = $0 { true } else { false } } != nil)
        #expect(await !manager.isAdvertising)
        backend.setState(.poweredOn)
        #expect(await manager.nextEvent { if case .stateChanged(.poweredOn) = $0 { true } else { false } } != nil)
        #expect(await manager.isAdvertising)
    }

    @Test func advertisingStoppedByTheAppStaysStoppedAfterAPowerCycle() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(publishing: [service])
        try await manager.startAdvertising(Advertisement(localName: "Battery"))
        try await manager.stopAdvertising()
        backend.setState(.poweredOff)
        backend.setState(.poweredOn)
        #expect(await manager.nextEvent { if case .stateChanged(.poweredOn) = $0 { true } else { false } } != nil)
        #expect(await !manager.isAdvertising)
    }
}
