// A heart-rate monitor written against the library, as an iOS developer would write it with CBPeripheralManager:
// publish the Heart Rate service, advertise it, and push a live measurement every second to subscribers,
// retrying when the queue says "not now" (updateValue -> false, then .readyToUpdateSubscribers).
//
//   swift run HeartRateMonitor [hciN]
import BlueZ
import GATTModel
import Logging
import Peripheral

let logger = Logger(label: "heart-rate-monitor")
let measurement = Characteristic(
    id: "hrm", uuid: BluetoothUUID(0x2A37), properties: [.notify], value: .dynamic([0x06, 60]))
let location = Characteristic(
    id: "location", uuid: BluetoothUUID(0x2A38), properties: [.read], value: .cached([0x01]))  // Chest
let service = Service(id: "hrs", uuid: BluetoothUUID(0x180D), characteristics: [measurement, location])

let backend = try await BlueZBackend(
    bus: .system, adapter: CommandLine.arguments.dropFirst().first ?? "hci0",
    options: BlueZOptions(pairing: PairingSettings(), deviceName: "Swift HRM"), logger: logger)
let manager = PeripheralManager(backend: backend, logger: logger)
try await manager.waitUntilPoweredOn()
try await manager.publish(service)
try await manager.startAdvertising(Advertisement(localName: "Swift HRM", serviceUUIDs: [service.uuid]))
logger.info("advertising the Heart Rate service; subscribe to 2A37 to see the measurements")

// The events tell us when a full queue has room again; keep them in a stream we can wait on.
let (ready, readyContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
Task {
    for await event in manager.events {
        switch event {
        case .subscribed(let central, _): logger.info("\(central.id) subscribed")
        case .unsubscribed(let central, _): logger.info("\(central.id) unsubscribed")
        case .readyToUpdateSubscribers: readyContinuation.yield()
        default: break
        }
    }
}

/// Sends a measurement a second, waiting for room whenever the queue is full.
@MainActor func beat(ready: AsyncStream<Void>) async throws {
    var bpm = 60
    var readyIterator = ready.makeAsyncIterator()
    while true {
        try await Task.sleep(for: .seconds(1))
        bpm = bpm >= 90 ? 60 : bpm + 1
        // Flags 0x06: u8 format, sensor contact supported and detected (Heart Rate Service 3.1.1.1).
        while await !manager.updateValue([0x06, UInt8(bpm)], for: measurement) {
            _ = await readyIterator.next()
        }
    }
}

try await beat(ready: ready)
