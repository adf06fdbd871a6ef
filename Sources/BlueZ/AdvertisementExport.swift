import BlueZAgent
import BlueZModel
import DBus
import GATTModel

/// The `org.bluez.LEAdvertisement1` object for a planned registration (5.66:doc/advertising-api.txt,
/// src/advertising.c `parsers`): exactly the properties `AdvertisementRegistration` lists, so the bytes the
/// planner predicted are the bytes bluetoothd programs.
enum AdvertisementExport {
    /// The interface; `onRelease` runs when bluetoothd calls `Release()` (it dropped the advertisement).
    static func interface(
        _ registration: AdvertisementRegistration, owner: OwnerCheck, onRelease: @escaping @Sendable () -> Void
    ) -> Interface {
        Interface(
            BlueZName.Interface.advertisement,
            methods: [
                Method(
                    "Release",
                    immediate: { call in
                        guard let call = owner.admit(call) else { return }
                        call.reply()
                        onRelease()
                    })
            ],
            properties: properties(registration).map { name, value in
                Property(name, signature: value.signature, get: { value })
            })
    }

    /// The property values, in a stable order.
    static func properties(_ registration: AdvertisementRegistration) -> [(String, DBusValue)] {
        var result: [(String, DBusValue)] = [
            (
                BlueZName.Property.type,
                .string(
                    registration.isPeripheral
                        ? BlueZName.AdvertisementValue.peripheral : BlueZName.AdvertisementValue.broadcast)
            ),
            (BlueZName.Property.serviceUUIDs, .strings(registration.serviceUUIDs.map(spelling))),
            (
                BlueZName.Property.manufacturerData,
                .dictionary(
                    key: "q", value: "v",
                    registration.manufacturerData.map { .init(.uint16($0.companyID), .variant(.bytes($0.data))) })
            ),
            (
                BlueZName.Property.serviceData,
                .dictionary(
                    key: "s", value: "v",
                    registration.serviceData.map { .init(.string(spelling($0.uuid)), .variant(.bytes($0.data))) })
            ),
            (
                BlueZName.Property.includes,
                .strings(registration.includesTxPower ? [BlueZName.AdvertisementValue.txPower] : [])
            ),
            (BlueZName.Property.discoverable, .boolean(registration.isDiscoverable)),
        ]
        if let name = registration.localName { result.append((BlueZName.Property.localName, .string(name))) }
        if let appearance = registration.appearance {
            result.append((BlueZName.Property.appearance, .uint16(appearance)))
        }
        if let channel = registration.secondaryChannel {
            result.append((BlueZName.Property.secondaryChannel, .string(channel)))
        }
        if let interval = registration.interval {
            // Milliseconds as `u` (src/advertising.c `parse_min_interval`).
            result.append((BlueZName.Property.minInterval, .uint32(UInt32(interval.lowerBound.rounded()))))
            result.append((BlueZName.Property.maxInterval, .uint32(UInt32(interval.upperBound.rounded()))))
        }
        return result
    }

    /// 16- and 32-bit UUIDs as 4 or 8 hex digits: `bt_string_to_uuid` (lib/uuid.c) shortens only those spellings,
    /// and a 32-bit UUID written in full would cost 16 bytes of advertising data.
    static func spelling(_ uuid: BluetoothUUID) -> String {
        uuid.width == .bits128 ? uuid.fullString : uuid.description
    }
}
