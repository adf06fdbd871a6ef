import GATTModel
import GATTProfile

/// Which of a device's services and characteristics stand for which of a profile's, as a central can tell them
/// apart: by UUID, each declared service taking the unmatched one of its UUID that holds most of its
/// characteristics (bluetoothd's PnP-only Device Information may sit beside a declared one), and each declared
/// characteristic the first unmatched one of its UUID in that service. bluetoothd's own services are left out.
/// The GATT checks and the write plan both walk this one match, so they never disagree on what is what.
struct ProfileMatch {
    /// A declared service, the device's service that stands for it (nil: missing), and its characteristics.
    struct ServiceMatch {
        /// The profile's service.
        var service: Service
        /// The device's, nil when it has none of that UUID left.
        var seen: ProbeService?
        /// Each declared characteristic with the device's (nil: missing), in the profile's order.
        var characteristics: [(declared: Characteristic, seen: ProbeCharacteristic?)]
        /// The device's characteristics in `seen` that no declared one took.
        var undeclared: [ProbeCharacteristic]
    }

    /// Every declared service, in the profile's order.
    var services: [ServiceMatch]
    /// The device's services that no declared one took (bluetoothd's own excluded).
    var undeclared: [ProbeService]

    /// The match of `profile` against what `report` saw.
    init(_ profile: PeripheralProfile, _ report: ProbeReport) {
        var unmatched = report.services.filter { ProfileClone.skippedService($0) == nil }
        services = profile.services.map { service in
            let candidates = unmatched.indices.filter { BluetoothUUID(unmatched[$0].uuid) == service.uuid }
            let best = candidates.max { Self.overlap(service, unmatched[$0]) < Self.overlap(service, unmatched[$1]) }
            guard let best else {
                return ServiceMatch(service: service, seen: nil, characteristics: [], undeclared: [])
            }
            let seen = unmatched.remove(at: best)
            var left = seen.characteristics
            let pairs = service.characteristics.map { characteristic in
                let index = left.firstIndex { BluetoothUUID($0.uuid) == characteristic.uuid }
                return (declared: characteristic, seen: index.map { left.remove(at: $0) })
            }
            return ServiceMatch(service: service, seen: seen, characteristics: pairs, undeclared: left)
        }
        undeclared = unmatched
    }

    /// How many of `service`'s characteristic UUIDs `seen` has.
    private static func overlap(_ service: Service, _ seen: ProbeService) -> Int {
        let uuids = Set(seen.characteristics.compactMap { BluetoothUUID($0.uuid) })
        return service.characteristics.filter { uuids.contains($0.uuid) }.count
    }
}
