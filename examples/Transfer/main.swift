// Apple's "BTLE Transfer" sample on Linux: when a central subscribes, send a text in chunks of the central's
// maximumUpdateValueLength, then "EOM"; when updateValue says the queue is full, wait for
// readyToUpdateSubscribers and send the same chunk again, so nothing is lost or repeated.
//
//   swift run Transfer [hciN] [text]
import BlueZ
import GATTModel
import Logging
import Peripheral

let logger = Logger(label: "transfer")
let arguments = CommandLine.arguments.dropFirst()
let text = arguments.dropFirst().first ?? String(repeating: "Hello from blemu over Bluetooth LE. ", count: 8)
let transfer = Characteristic(
    id: "transfer", uuid: BluetoothUUID("2F016955-E675-49A6-9176-111E2A1CF333")!, properties: [.notify])
let service = Service(
    id: "transfer-service", uuid: BluetoothUUID("E71EE188-279F-4ED6-8055-12D77BFD900C")!,
    characteristics: [transfer])

let backend = try await BlueZBackend(
    bus: .system, adapter: arguments.first ?? "hci0",
    options: BlueZOptions(pairing: PairingSettings(), deviceName: "Transfer"), logger: logger)
let manager = PeripheralManager(backend: backend, logger: logger)
try await manager.waitUntilPoweredOn()
try await manager.publish(service)
try await manager.startAdvertising(Advertisement(localName: "Transfer", serviceUUIDs: [service.uuid]))
logger.info("advertising; subscribe to 2F016955 to receive the text")

var pending: [[UInt8]] = []
for await event in manager.events {
    switch event {
    case .subscribed(let central, _):
        // Core Bluetooth's sample sends the whole text to each new subscriber, sized to its limit.
        let limit = central.maximumUpdateValueLength
        let bytes = Array(text.utf8)
        pending = stride(from: 0, to: bytes.count, by: limit).map { Array(bytes[$0..<min($0 + limit, bytes.count)]) }
        pending.append(Array("EOM".utf8))
    case .readyToUpdateSubscribers:
        break
    default:
        continue
    }
    // Send until the queue is full; the rest goes when .readyToUpdateSubscribers comes.
    while let chunk = pending.first, await manager.updateValue(chunk, for: transfer) {
        pending.removeFirst()
    }
    if pending.isEmpty { logger.info("text sent, ending with EOM") }
}
