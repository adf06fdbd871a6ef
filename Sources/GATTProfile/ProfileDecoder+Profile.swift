import GATTModel

/// The top level, the advertisement and pairing.
extension ProfileDecoder {
    /// The keys a profile may have at the top level.
    static let profileKeys = ["name", "advertisement", "pairing", "services", "behaviour"]

    /// Decodes the whole profile. Services come first whatever the key order, since the advertisement and the
    /// behaviour refer to them.
    mutating func decodeProfile(_ root: YAMLNode) -> PeripheralProfile? {
        guard let top = fields(root, in: "the profile", allowed: Self.profileKeys, required: ["name", "services"])
        else { return nil }
        let name = top["name"].flatMap { string($0, for: "`name`") }
        var services: [Service] = []
        if let node = top["services"] { services = decodeServices(node) }
        var advertisement = Advertisement()
        if let node = top["advertisement"], let decoded = decodeAdvertisement(node) {
            advertisement = decoded
        }
        var pairing = PairingSettings()
        if let node = top["pairing"], let decoded = decodePairing(node) { pairing = decoded }
        var behaviour = Behaviour()
        if let node = top["behaviour"], let decoded = decodeBehaviour(node) { behaviour = decoded }
        warnAboutUnreachableWriteErrors()
        guard let name else { return nil }
        return PeripheralProfile(
            name: name, advertisement: advertisement, pairing: pairing, services: services, behaviour: behaviour)
    }

    // MARK: Advertisement

    /// Decodes `advertisement`; advertised service UUIDs must belong to a published primary service.
    mutating func decodeAdvertisement(_ node: YAMLNode) -> Advertisement? {
        let keys = [
            "local-name", "service-uuids", "appearance", "manufacturer-data", "service-data", "tx-power", "interval",
            "discoverable", "scan-response", "mode",
        ]
        guard let map = fields(node, in: "advertisement", allowed: keys) else { return nil }
        var advertisement = Advertisement()
        advertisement.localName = map["local-name"].flatMap { string($0, for: "`local-name`") }
        var uuidNodes: [BluetoothUUID: YAMLNode] = [:]
        if let list = map["service-uuids"].flatMap({ sequence($0, in: "`service-uuids`") }) {
            for item in list {
                guard let uuid = advertisedServiceUUID(item) else { continue }
                if !primaryServiceUUIDs.contains(uuid) {
                    report(item, "advertised service \(describe(uuid)) is not published by any primary service")
                }
                advertisement.serviceUUIDs.append(uuid)
                uuidNodes[uuid] = uuidNodes[uuid] ?? item
            }
        }
        if let value = map["appearance"] {
            advertisement.appearance = integer(value, for: "`appearance`", in: 0...0xFFFF).map { UInt16($0) }
        }
        if let list = map["manufacturer-data"].flatMap({ sequence($0, in: "`manufacturer-data`") }) {
            for item in list {
                guard
                    let entry = fields(
                        item, in: "manufacturer data", allowed: ["company", "data"],
                        required: ["company", "data"]),
                    let company = entry["company"].flatMap({ integer($0, for: "`company`", in: 0...0xFFFF) }),
                    let data = entry["data"].flatMap({ bytes($0, for: "`data`") })
                else { continue }
                advertisement.manufacturerData.append(ManufacturerData(companyID: UInt16(company), data: data))
            }
        }
        if let list = map["service-data"].flatMap({ sequence($0, in: "`service-data`") }) {
            for item in list {
                guard
                    let entry = fields(
                        item, in: "service data", allowed: ["uuid", "data"], required: ["uuid", "data"]),
                    let uuid = entry["uuid"].flatMap({ self.uuid($0, kind: .service, for: "service data") }),
                    let data = entry["data"].flatMap({ bytes($0, for: "`data`") })
                else { continue }
                advertisement.serviceData.append(ServiceData(uuid: uuid, data: data))
            }
        }
        if let value = map["tx-power"], let flag = boolean(value, for: "`tx-power`") {
            advertisement.includesTxPower = flag
        }
        if let value = map["interval"], let range = decodeInterval(value) { advertisement.interval = range }
        if let value = map["discoverable"], let flag = boolean(value, for: "`discoverable`") {
            advertisement.isDiscoverable = flag
        }
        if let value = map["scan-response"],
            let name = choice(value, for: "scan-response policy", from: ScanResponsePolicy.allCases.map(\.rawValue)),
            let policy = ScanResponsePolicy(rawValue: name)
        {
            advertisement.scanResponse = policy
        }
        if let value = map["mode"],
            let name = choice(value, for: "advertising mode", from: AdvertisingMode.allCases.map(\.rawValue)),
            let mode = AdvertisingMode(rawValue: name)
        {
            advertisement.mode = mode
            if mode == .extended { warnAboutExtended(value, scanResponse: map["scan-response"]) }
        }
        sites.advertisement = advertisement
        sites.advertisedServices = uuidNodes.mapValues(\.mark)
        sites.localName = map["local-name"]?.mark
        return advertisement
    }

    /// An entry of `service-uuids`: a service `id` of this profile, a SIG service name, or hex. An id that is also
    /// a SIG name or hex for another UUID is refused as ambiguous.
    private mutating func advertisedServiceUUID(_ node: YAMLNode) -> BluetoothUUID? {
        if let text = node.scalar, let byID = serviceUUIDsByID[text] {
            let other = AssignedNumber.named(text, kind: .service)?.uuid ?? BluetoothUUID(text)
            if let other, other != byID {
                report(
                    node,
                    "`\(EditDistance.echo(text))` is ambiguous: service id `\(EditDistance.echo(text))` is \(describe(byID)), the SIG name or hex is \(describe(other))",
                    hint: "rename the service id")
                return nil
            }
            return byID
        }
        return uuid(node, kind: .service, for: "advertised service")
    }

    /// Extended advertising is for a device that really sends it: say who will not see it, so nobody ships it by
    /// accident, and that `scan-response` means nothing without a scan response.
    private mutating func warnAboutExtended(_ modeNode: YAMLNode, scanResponse: YAMLNode?) {
        warn(
            modeNode.mark,
            "an extended advertisement is seen only by centrals that scan for extended advertising: phones "
                + "without Bluetooth 5, Core Bluetooth where `supports(.extendedScanAndConnect)` is false, and many "
                + "Linux scans will not find the device; it needs BlueZ >= 5.69 and a controller with LE Extended "
                + "Advertising",
            hint: "keep `mode: legacy` (the default) unless the device you emulate advertises extended")
        if let scanResponse {
            warn(
                scanResponse.mark,
                "`scan-response` has no effect in extended mode: a connectable extended advertisement has no scan "
                    + "response, and the name goes into the advertising data")
        }
    }

    /// `interval: {min-ms: 100, max-ms: 150}`: Core Spec Vol 4, Part E, 7.8.5 allows 20 ms to 10.24 s.
    private mutating func decodeInterval(_ node: YAMLNode) -> ClosedRange<Double>? {
        guard let map = fields(node, in: "`interval`", allowed: ["min-ms", "max-ms"], required: ["min-ms", "max-ms"]),
            let low = map["min-ms"].flatMap({ number($0, for: "`min-ms`") }),
            let high = map["max-ms"].flatMap({ number($0, for: "`max-ms`") })
        else { return nil }
        guard (20...10240).contains(low), (20...10240).contains(high) else {
            report(node, "advertising interval must be within 20...10240 ms")
            return nil
        }
        guard low <= high else {
            report(node, "advertising interval `min-ms` \(low) is above `max-ms` \(high)")
            return nil
        }
        return low...high
    }

    // MARK: Pairing

    /// Decodes `pairing`.
    mutating func decodePairing(_ node: YAMLNode) -> PairingSettings? {
        guard let map = fields(node, in: "pairing", allowed: ["io-capability", "passkey", "bondable"]) else {
            return nil
        }
        var pairing = PairingSettings()
        if let value = map["io-capability"],
            let name = choice(value, for: "IO capability", from: IOCapability.allCases.map(\.rawValue)),
            let capability = IOCapability(rawValue: name)
        {
            pairing.ioCapability = capability
        }
        // A passkey is six decimal digits (Core Spec Vol 3, Part H, 2.3.5.3).
        if let value = map["passkey"], let passkey = integer(value, for: "`passkey`", in: 0...999_999) {
            // The peripheral's agent is asked for a passkey (Agent1.RequestPasskey) only when this side types it:
            // when it displays, the kernel picks a random one and bluetoothd only shows it (DisplayPasskey), so a
            // fixed passkey on a display-only device failed with SMP Confirm Value Failed. A keyboard-display
            // responder types only when the initiator displays (Core Spec Vol 3, Part H, 2.3.5.1, Table 2.8), which
            // then chooses at random too; only keyboard-only against a keyboard-only central has both sides type.
            if pairing.ioCapability == .keyboardOnly {
                pairing.passkey = UInt32(passkey)
            } else {
                let why =
                    pairing.ioCapability == .keyboardDisplay
                    ? "with keyboard-display this side types only when the central displays, and the central's "
                        + "stack then chooses a random passkey (Core Spec Vol 3, Part H, 2.3.5.1)"
                    : "with \(pairing.ioCapability.rawValue) the kernel chooses a random passkey and bluetoothd "
                        + "only shows it (Agent1.DisplayPasskey)"
                report(
                    value, "a fixed `passkey` needs `io-capability: keyboard-only`: " + why,
                    hint: "use keyboard-only (the central must type the same passkey), or drop `passkey`")
            }
        }
        if let value = map["bondable"], let flag = boolean(value, for: "`bondable`") { pairing.isBondable = flag }
        return pairing
    }

    // MARK: UUIDs

    /// A UUID written as hex (`180D`, `0x180D`, 32-bit, 128-bit) or as a SIG key of the given kind.
    mutating func uuid(_ node: YAMLNode, kind: AssignedNumber.Kind, for what: String) -> BluetoothUUID? {
        guard let text = string(node, for: what) else { return nil }
        if let entry = AssignedNumber.named(text, kind: kind) { return entry.uuid }
        if let uuid = BluetoothUUID(text) { return uuid }
        report(
            node,
            "bad UUID `\(EditDistance.echo(text))` for \(what): expected 16-, 32- or 128-bit hex or a SIG \(kind.rawValue) name",
            hint: EditDistance.hint(for: text, in: AssignedNumber.keys(of: kind)))
        return nil
    }

    /// `180F (Battery)` for known SIG numbers, else the UUID.
    func describe(_ uuid: BluetoothUUID) -> String {
        uuid.assignedName.map { "\(uuid) (\($0))" } ?? "\(uuid)"
    }
}
