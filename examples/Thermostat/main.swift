// A thermostat with its own request handler: the temperature (read, notify) drifts toward a writable setpoint.
// Writes outside 5-35 C are rejected with application error 0x80, one of the codes bluetoothd can deliver
// (BlueZErrorReply). Values are Environmental Sensing temperatures: s16 in 0.01 C.
//
//   swift run Thermostat [hciN]
import BlueZ
import GATTModel
import Logging
import Peripheral
import Synchronization

let logger = Logger(label: "thermostat")
let temperature = Characteristic(
    id: "temperature", uuid: BluetoothUUID(0x2A6E), properties: [.read, .notify], value: .dynamic([0, 0]))
let setpoint = Characteristic(
    id: "setpoint", uuid: BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!, properties: [.read, .write],
    value: .dynamic([0, 0]), maximumLength: 2,
    descriptors: [.userDescription("Setpoint, 0.01 C")])
let service = Service(id: "ess", uuid: BluetoothUUID(0x181A), characteristics: [temperature, setpoint])

/// The thermostat's state, in hundredths of a degree; shared by the handler and the control loop.
final class Climate: Sendable {
    let state = Mutex((current: 1800, target: 2100))
}

/// Serves the two characteristics from `Climate` and validates setpoint writes before applying them.
struct ThermostatHandler: RequestHandler {
    let climate: Climate

    func handleRead(_ request: consuming ReadRequest) async {
        let (current, target) = climate.state.withLock { ($0.current, $0.target) }
        let value = request.characteristic.id == "temperature" ? current : target
        _ = request.respond(with: littleEndian(Int16(clamping: value)))
    }

    func handleWrites(_ requests: consuming WriteRequests) async {
        // Validate the whole batch first, then apply: all or nothing.
        var newTarget: Int?
        for write in requests.requests {
            guard write.characteristic.id == "setpoint", write.offset == 0, write.value.count == 2 else {
                _ = requests.reject(.invalidAttributeValueLength)
                return
            }
            let value = Int(Int16(bitPattern: UInt16(write.value[0]) | UInt16(write.value[1]) << 8))
            guard (500...3500).contains(value) else {
                _ = requests.reject(ATTError(rawValue: 0x80))
                return
            }
            newTarget = value
        }
        if let newTarget { climate.state.withLock { $0.target = newTarget } }
        _ = requests.respond()
    }
}

func littleEndian(_ value: Int16) -> [UInt8] {
    [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
}

let climate = Climate()
let backend = try await BlueZBackend(
    bus: .system, adapter: CommandLine.arguments.dropFirst().first ?? "hci0",
    options: BlueZOptions(pairing: PairingSettings(), deviceName: "Swift Thermostat"), logger: logger)
let manager = PeripheralManager(backend: backend, handler: ThermostatHandler(climate: climate), logger: logger)
try await manager.waitUntilPoweredOn()
try await manager.publish(service)
try await manager.startAdvertising(Advertisement(localName: "Thermostat", serviceUUIDs: [service.uuid]))
logger.info("advertising; write a setpoint (s16, 0.01 C) and watch 2A6E move toward it")

while true {
    try await Task.sleep(for: .seconds(2))
    // Move a quarter degree per step toward the target, like a heater with some inertia.
    let current = climate.state.withLock { state in
        let step = max(-25, min(25, state.target - state.current))
        state.current += step
        return state.current
    }
    // A notification that does not fit now is simply superseded by the next step's value.
    _ = await manager.updateValue(littleEndian(Int16(clamping: current)), for: temperature)
}
