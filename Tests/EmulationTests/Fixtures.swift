import GATTModel
import GATTProfile

/// Hand-built copies of the bundled profiles' relevant parts (profiles/heart-rate.yaml, thermostat.yaml), so the
/// engines are tested against the model without the YAML decoder.
enum Fixtures {
    static let heartRateFlags = FieldSpec(
        name: "flags",
        type: .flags(
            bytes: 1,
            bits: [
                FlagBit(name: "value-format-u16", bit: 0), FlagBit(name: "sensor-contact-detected", bit: 1),
                FlagBit(name: "sensor-contact-supported", bit: 2), FlagBit(name: "energy-expended-present", bit: 3),
                FlagBit(name: "rr-interval-present", bit: 4),
            ]))

    static let heartRateMeasurement = Characteristic(
        id: "heart-rate-measurement", uuid: BluetoothUUID(0x2A37), properties: [.notify], value: .dynamic([0x06, 72]),
        layout: ValueLayout([heartRateFlags, FieldSpec(name: "bpm", type: .unsigned(bytes: 1))]))

    static let batteryLevel = Characteristic(
        id: "battery-level", uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], value: .dynamic([87]),
        layout: ValueLayout([FieldSpec(name: "percent", type: .unsigned(bytes: 1))]))

    static let controlPoint = Characteristic(
        id: "heart-rate-control-point", uuid: BluetoothUUID(0x2A39), properties: [.write], maximumLength: 1)

    static func heartRate(schedules: [Schedule]? = nil) -> PeripheralProfile {
        PeripheralProfile(
            name: "blemu HR",
            services: [
                Service(
                    id: "heart-rate", uuid: BluetoothUUID(0x180D),
                    characteristics: [heartRateMeasurement, controlPoint]),
                Service(id: "battery", uuid: BluetoothUUID(0x180F), characteristics: [batteryLevel]),
            ],
            behaviour: Behaviour(
                schedules: schedules ?? [
                    Schedule(
                        characteristicID: "heart-rate-measurement", action: .notify, interval: .seconds(1),
                        start: .firstSubscription,
                        generators: [
                            FieldGenerator(
                                field: "bpm", generator: .randomWalk(start: 72, step: 2, range: 55...110, seed: 10))
                        ]),
                    Schedule(
                        characteristicID: "battery-level", action: .update, interval: .seconds(600), start: .launch,
                        generators: [
                            FieldGenerator(
                                field: "percent", generator: .counter(start: 87, step: -1, range: 5...87, wraps: false))
                        ]),
                ],
                writeRules: [
                    WriteRule(
                        characteristicID: "heart-rate-control-point",
                        actions: [.validate(.allowedValues([[0x01]]), error: ATTError(rawValue: 0x80)), .store])
                ]))
    }

    static func signed16(
        _ id: String, _ field: String, _ value: Int16, _ properties: CharacteristicProperties
    )
        -> Characteristic
    {
        Characteristic(
            id: id, uuid: BluetoothUUID(0x2A6E), properties: properties,
            value: .dynamic([UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]),
            maximumLength: 2, layout: ValueLayout([FieldSpec(name: field, type: .signed(bytes: 2))]))
    }

    static func thermostat(writeRules: [WriteRule]) -> PeripheralProfile {
        PeripheralProfile(
            name: "blemu Thermostat",
            services: [
                Service(
                    id: "environmental-sensing", uuid: BluetoothUUID(0x181A),
                    characteristics: [signed16("temperature", "centidegrees", 2150, [.read, .notify])]),
                Service(
                    id: "thermostat", uuid: BluetoothUUID(0x1234),
                    characteristics: [
                        signed16("set-point", "centidegrees", 2100, [.read, .write, .notify]),
                        Characteristic(
                            id: "mode", uuid: BluetoothUUID(0x1235), properties: [.read, .write], value: .dynamic([1]),
                            maximumLength: 1,
                            layout: ValueLayout([FieldSpec(name: "mode", type: .unsigned(bytes: 1))])),
                        Characteristic(
                            id: "control", uuid: BluetoothUUID(0x1236), properties: [.write, .indicate]),
                    ]),
            ],
            behaviour: Behaviour(writeRules: writeRules))
    }
}
