import BlueZModel
import GATTModel
import GATTProfile

/// Checks a profile against a probe report, promise by promise: the advertisement as scanned, the GATT tree with
/// each characteristic's properties and declared descriptors, the GAP name, the values a central could read, the
/// reads the profile guards (`+Security`), and the writes made with `--writes` (`+Writes`, with the guarded writes
/// made unpaired among the `security` checks).
///
/// Only what a central can see is checked, and what it cannot tell apart is skipped with the reason, never failed:
/// a check that fails on a device that keeps the profile is as wrong as one that misses a defect. bluetoothd's own
/// services (GAP, GATT, its PnP-only Device Information) and the descriptors it adds itself (the CCCD, Extended
/// Properties) are not the device's promises.
public enum ProfileVerifier {
    /// The checks of `profile` against `report`.
    public static func verify(_ profile: PeripheralProfile, against report: ProbeReport) -> Verification {
        var checks = advertisement(profile, report.device, services: report.services)
        checks += gatt(profile, report)
        checks += security(profile, report)
        if let made = report.writes { checks += writes(profile, made) }
        return Verification(
            profile: profile.name, address: report.device.address, adapter: report.adapter, checks: checks)
    }

    // MARK: Advertisement

    static func advertisement(
        _ profile: PeripheralProfile, _ device: ProbeDevice, services: [ProbeService]
    ) -> [Verification.Check] {
        let declared = profile.advertisement
        var checks: [Verification.Check] = []
        /// A check of one advertised field (`subject`: the field, `/` the item of a list such as a UUID or a company):
        /// `value` when the profile declares it, `advertised` for a UUID, `undeclared` for what the device advertises
        /// that the profile does not.
        func check(_ field: String, _ name: String, _ passed: Bool, expected: String, actual: String) {
            checks.append(
                .init(.advertisement, field, name, passed ? .pass : .fail, expected: expected, actual: actual))
        }
        // What Core Bluetooth's legacy budget lets a device advertise of the profile (docs/profile-format.md): a
        // UUID that overflows may be left out, and a long name may be shortened.
        let plan = try? AdvertisingPlanner.plan(declared)

        if let name = declared.localName {
            let seen = device.name ?? ""
            let isPrefix = !seen.isEmpty && name.hasPrefix(seen) && seen != name
            check(
                "local-name", "value", seen == name || isPrefix, expected: quoted(name),
                actual: device.name.map { quoted($0) + (isPrefix ? " (shortened)" : "") } ?? "no name")
        }

        let advertised = Set(device.uuids.compactMap(BluetoothUUID.init))
        for uuid in declared.serviceUUIDs {
            if advertised.contains(uuid) {
                check("service-uuids/\(uuid)", "advertised", true, expected: "\(uuid)", actual: "\(uuid)")
            } else if plan?.overflowUUIDs.contains(uuid) == true {
                checks.append(
                    .init(
                        .advertisement, "service-uuids/\(uuid)", "advertised", .skip, expected: "\(uuid)",
                        actual: "\(uuid) not advertised; it does not fit the legacy budget under Core Bluetooth's "
                            + "rule (blemu adv shows the placement), so a device may leave it out"))
            } else {
                check("service-uuids/\(uuid)", "advertised", false, expected: "\(uuid)", actual: "not advertised")
            }
        }
        // bluetoothd adds the primary services it resolved to a known device's UUIDs (src/device.c, the primaries it
        // discovers; kept for a bonded device), so a UUID that is also a GATT service cannot be told to be
        // advertised; only the others are the device's own. GAP and GATT are among them even where bluetoothd's
        // client exports no object for them (5.66 hid them: a second probe of the device saw 1800 in UUIDs).
        let inGATT = Set(services.compactMap { BluetoothUUID($0.uuid) } + [.genericAccess, .genericAttribute])
        let extra = advertised.subtracting(declared.serviceUUIDs).subtracting(inGATT)
        for uuid in extra.sorted(by: { $0.description < $1.description }) {
            check(
                "service-uuids/\(uuid)", "undeclared", false, expected: "only the profile's",
                actual: "\(uuid) advertised")
        }

        let manufacturer = device.manufacturerData ?? [:]
        for data in declared.manufacturerData {
            let key = Hex.word(data.companyID)
            let seen = manufacturer.first { Hex.bytes($0.key).map(word) == data.companyID }?.value
            check(
                "manufacturer-data/0x\(key)", "value", seen.flatMap(Hex.bytes) == data.data,
                expected: "company 0x\(key): \(Hex.string(data.data, separator: ""))",
                actual: seen.map { "company 0x\(key): \($0)" } ?? "none for company 0x\(key)")
        }
        for (company, hex) in manufacturer.sorted(by: { $0.key < $1.key })
        where !declared.manufacturerData.contains(where: { Hex.bytes(company).map(word) == $0.companyID }) {
            check(
                "manufacturer-data/0x\(company)", "undeclared", false, expected: "only the profile's",
                actual: "company 0x\(company): \(hex)")
        }

        let serviceData = device.serviceData ?? [:]
        for data in declared.serviceData {
            let seen = serviceData.first { BluetoothUUID($0.key) == data.uuid }?.value
            check(
                "service-data/\(data.uuid)", "value", seen.flatMap(Hex.bytes) == data.data,
                expected: "\(data.uuid): \(Hex.string(data.data, separator: ""))",
                actual: seen.map { "\(data.uuid): \($0)" } ?? "none for \(data.uuid)")
        }
        for (uuid, hex) in serviceData.sorted(by: { $0.key < $1.key })
        where !declared.serviceData.contains(where: { BluetoothUUID(uuid) == $0.uuid }) {
            check(
                "service-data/\(uuid)", "undeclared", false, expected: "only the profile's", actual: "\(uuid): \(hex)")
        }

        if declared.appearance == 0 && device.appearance == nil {
            // bluetoothd does not publish an Appearance of 0, Unknown (src/device.c get_appearance, 5.66-5.87).
            checks.append(
                .init(
                    .advertisement, "appearance", "value", .skip, expected: "0x0000",
                    actual: "none reported: bluetoothd publishes no Appearance of 0 (Unknown)"))
        } else if let appearance = declared.appearance {
            check(
                "appearance", "value", device.appearance == Int(appearance), expected: "0x" + Hex.word(appearance),
                actual: device.appearance.map { "0x" + Hex.word(UInt16(truncatingIfNeeded: $0)) } ?? "none")
        }
        if declared.includesTxPower {
            check(
                "tx-power", "value", device.txPower != nil, expected: "a TX power level",
                actual: device.txPower.map { "\($0) dBm" } ?? "none")
        }
        return checks
    }

    /// A two-byte key (`006B`) as its number.
    private static func word(_ bytes: [UInt8]) -> UInt16? {
        bytes.count == 2 ? UInt16(bytes[0]) << 8 | UInt16(bytes[1]) : nil
    }

    // MARK: GATT and values

    static func gatt(_ profile: PeripheralProfile, _ report: ProbeReport) -> [Verification.Check] {
        var checks: [Verification.Check] = []
        if let gapName = ProfileClone.gapName(report) {
            checks.append(
                .init(
                    .gatt, "gap", "device-name", gapName == profile.name ? .pass : .fail,
                    expected: quoted(profile.name), actual: quoted(gapName)))
        } else {
            // A central's bluetoothd before 5.80 keeps the peer's GAP service to its internal plugins and does not
            // export it (dbd6591bd): the name is there, but this central cannot read it.
            checks.append(
                .init(
                    .gatt, "gap", "device-name", .skip, expected: quoted(profile.name),
                    actual: "the central's bluetoothd did not show the GAP service (before 5.80 it keeps it to itself)"
                ))
        }
        let behaviour = Promises(profile, listened: report.listenSeconds)
        let match = ProfileMatch(profile, report)
        for matched in match.services {
            let service = matched.service
            guard let seen = matched.seen else {
                checks.append(
                    .init(
                        .gatt, service.id, "present", .fail, expected: "service \(service.uuid)",
                        actual: "missing"))
                continue
            }
            checks.append(
                .init(
                    .gatt, service.id, "present", seen.isPrimary == service.isPrimary ? .pass : .fail,
                    expected: "\(kind(service.isPrimary)) service \(service.uuid)",
                    actual: "\(kind(seen.isPrimary)) service \(seen.uuid)"))
            checks += characteristics(of: matched, behaviour: behaviour)
        }
        for service in match.undeclared {
            checks.append(
                .init(
                    .gatt, service.uuid, "undeclared", .fail, expected: "no such service",
                    actual: "\(kind(service.isPrimary)) service \(service.uuid)"))
        }
        return checks
    }

    private static func kind(_ isPrimary: Bool) -> String { isPrimary ? "primary" : "secondary" }

    /// What the profile's behaviour promises a central, as the checks need it.
    struct Promises {
        /// The characteristics whose value the behaviour changes: what a schedule sends, and what a write rule sets
        /// or replies with.
        var changing: Set<String>
        /// The shortest interval at which a schedule notifies or indicates each characteristic (schedules paced by
        /// a recording are left out: their pace is the recording's).
        var intervals: [String: Duration]
        /// How long the central listened after subscribing, in seconds (`blemu verify --listen`).
        var listened: Double
        /// The ranges the behaviour keeps typed fields in.
        var ranges: FieldRanges

        /// The promises of `profile`'s behaviour, for a central that listened `listened` seconds.
        init(_ profile: PeripheralProfile, listened: Double) {
            changing = Set(profile.behaviour.schedules.map(\.characteristicID))
            for rule in profile.behaviour.writeRules {
                for action in rule.actions {
                    switch action {
                    case .set(let id, _, _), .reply(let id, _): changing.insert(id)
                    case .store, .validate, .echo: break
                    }
                }
            }
            // A protocol changes what its cases send, set or store, and a record store's characteristic carries
            // whichever record was sent last.
            for deviceProtocol in profile.behaviour.protocols {
                changing.insert(deviceProtocol.characteristicID)
                changing.formUnion(deviceProtocol.targets)
            }
            changing.formUnion(profile.behaviour.records.map(\.characteristicID))
            intervals = [:]
            for schedule in profile.behaviour.schedules
            where [.notify, .indicate].contains(schedule.action) && !schedule.isRecordedPace
                && schedule.interval > .zero
            {
                intervals[schedule.characteristicID] = min(
                    intervals[schedule.characteristicID] ?? schedule.interval, schedule.interval)
            }
            self.listened = listened
            ranges = FieldRanges(profile)
        }
    }

    /// The checks of a service's characteristics against what the central saw of them.
    private static func characteristics(
        of matched: ProfileMatch.ServiceMatch, behaviour: Promises
    ) -> [Verification.Check] {
        var checks: [Verification.Check] = []
        for (characteristic, seen) in matched.characteristics {
            guard let found = seen else {
                checks.append(
                    .init(
                        .gatt, characteristic.id, "present", .fail,
                        expected: "characteristic \(characteristic.uuid)", actual: "missing"))
                continue
            }
            let expected = onAirProperties(characteristic.properties)
            let actual = ProfileClone.properties(found.flags)
            checks.append(
                .init(
                    .gatt, characteristic.id, "properties", Set(expected) == Set(actual) ? .pass : .fail,
                    expected: expected.joined(separator: ", "), actual: actual.joined(separator: ", ")))
            checks += descriptors(of: characteristic, seen: found)
            let isSteady =
                characteristic.properties.isDisjoint(with: .anyWrite)
                && !behaviour.changing.contains(characteristic.id)
            if let value = value(of: characteristic, seen: found, isSteady: isSteady) { checks.append(value) }
            if let bytes = found.read?.value.flatMap({ Hex.bytes($0.hex) }),
                let range = behaviour.ranges.check([bytes], of: characteristic, as: .value)
            {
                checks.append(range)
            }
            if let interval = behaviour.intervals[characteristic.id] {
                checks += notifications(of: characteristic, seen: found, every: interval, listened: behaviour.listened)
            }
            if behaviour.listened > 0,
                let range = behaviour.ranges.check(
                    found.notifications.compactMap { Hex.bytes($0.hex) }, of: characteristic, as: .notification)
            {
                checks.append(range)
            }
        }
        for characteristic in matched.undeclared {
            checks.append(
                .init(
                    .gatt, characteristic.uuid, "undeclared", .fail,
                    expected: "no such characteristic in \(matched.service.id)",
                    actual: "characteristic \(characteristic.uuid)"))
        }
        return checks
    }

    /// The properties a central sees for `properties`: the declaration's bits and the extended ones, with Core
    /// Bluetooth's encryption-required variants as the notify or indicate they are on the air.
    static func onAirProperties(_ properties: CharacteristicProperties) -> [String] {
        var onAir = properties
        if properties.contains(.notifyEncryptionRequired) { onAir.insert(.notify) }
        if properties.contains(.indicateEncryptionRequired) { onAir.insert(.indicate) }
        onAir.remove(.notifyEncryptionRequired)
        onAir.remove(.indicateEncryptionRequired)
        return ProfileClone.properties(onAir.names)
    }

    /// Descriptors bluetoothd adds itself: the CCCD of what notifies or indicates, and Extended Properties.
    private static let stackDescriptors: Set<BluetoothUUID> = [
        .clientCharacteristicConfiguration, .characteristicExtendedProperties,
    ]

    private static func descriptors(
        of characteristic: Characteristic, seen: ProbeCharacteristic
    ) -> [Verification.Check] {
        var checks: [Verification.Check] = []
        var unmatched = seen.descriptors.filter { BluetoothUUID($0.uuid).map(stackDescriptors.contains) != true }
        for descriptor in characteristic.descriptors where !stackDescriptors.contains(descriptor.uuid) {
            let subject = "\(characteristic.id)/\(descriptor.uuid)"
            guard let index = unmatched.firstIndex(where: { BluetoothUUID($0.uuid) == descriptor.uuid }) else {
                checks.append(
                    .init(
                        .gatt, subject, "present", .fail, expected: "descriptor \(descriptor.uuid)", actual: "missing"))
                continue
            }
            let found = unmatched.remove(at: index)
            checks.append(
                .init(
                    .gatt, subject, "present", .pass, expected: "descriptor \(descriptor.uuid)",
                    actual: "descriptor \(found.uuid)"))
            // User descriptions and presentation formats are what the profile says, byte for byte.
            guard descriptor.permissions.allowsRead else { continue }
            var readSecurity = descriptor.security[.read]
            if descriptor.permissions.contains(.readEncryptionRequired) { readSecurity = max(readSecurity, .encrypted) }
            checks.append(compare(descriptor.value, with: found.read, subject: subject, readSecurity: readSecurity))
        }
        for descriptor in unmatched {
            checks.append(
                .init(
                    .gatt, "\(characteristic.id)/\(descriptor.uuid)", "undeclared", .fail,
                    expected: "no such descriptor", actual: "descriptor \(descriptor.uuid)"))
        }
        return checks
    }

    /// The pace check of a characteristic a schedule notifies or indicates every `interval`, over the `listened`
    /// seconds after subscribing: the median gap between arrivals within a quarter of the interval (a link event or
    /// a busy host delays one value, not the pace), and each value decoding by the declared fields. Nothing is
    /// checked when the central did not listen. A window shorter than three intervals is a skip: a schedule that
    /// starts on the subscription sends its first value one interval in, so two intervals may hold a single value.
    private static func notifications(
        of characteristic: Characteristic, seen: ProbeCharacteristic, every interval: Duration, listened: Double
    ) -> [Verification.Check] {
        guard listened > 0 else { return [] }
        let seconds = BlueZCentral.seconds(interval)
        // The tolerance is part of the promise the report states, so a failure shows the window it missed.
        let expected =
            "one every \(number(seconds)) s, the median gap within a quarter of it "
            + "(\(number(seconds * 0.75)) to \(number(seconds * 1.25)) s)"
        if let failure = seen.subscribeError {
            // A subscription the profile guards (notify-encryption-required and the like) is refused to a central
            // that did not pair, as it should be.
            let isGuarded = subscriptionSecurity(characteristic) != nil
            return [
                .init(
                    .notification, characteristic.id, "pace", isGuarded ? .skip : .fail, expected: expected,
                    actual: "subscribing failed: \(failure.name): \(failure.message)"
                        + (isGuarded ? " (the profile guards it: pair with --pair to check the pace)" : ""))
            ]
        }
        guard listened >= 3 * seconds else {
            return [
                .init(
                    .notification, characteristic.id, "pace", .skip, expected: expected,
                    actual:
                        "listened \(number(listened)) s, too short to tell (--listen \(number(3 * seconds)) or more)")
            ]
        }
        let arrivals = seen.notifications.compactMap(\.at)
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }.sorted()
        var checks: [Verification.Check] = []
        if gaps.isEmpty {
            checks.append(
                .init(
                    .notification, characteristic.id, "pace", .fail, expected: expected,
                    actual: "\(arrivals.count) value(s) in \(number(listened)) s"))
        } else {
            let median = gaps[gaps.count / 2]
            checks.append(
                .init(
                    .notification, characteristic.id, "pace", abs(median - seconds) <= seconds / 4 ? .pass : .fail,
                    expected: expected,
                    actual: "\(arrivals.count) values in \(number(listened)) s, one every \(number(median)) s (median)")
            )
        }
        if let layout = characteristic.layout, !seen.notifications.isEmpty {
            let bad = seen.notifications.filter { layout.decode(Hex.bytes($0.hex) ?? []) == nil }
            let fields = layout.fields.map(\.name).joined(separator: ", ")
            checks.append(
                .init(
                    .notification, characteristic.id, "fields", bad.isEmpty ? .pass : .fail,
                    expected: "values with the fields \(fields)",
                    actual: bad.isEmpty
                        ? "\(seen.notifications.count) values decode"
                        : "\(bad.count) of \(seen.notifications.count) do not decode: \(bad.map(\.hex).joined(separator: ", "))"
                ))
        }
        return checks
    }

    /// Seconds as a person reads them: `1`, `0.25`.
    private static func number(_ seconds: Double) -> String {
        let rounded = (seconds * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// The value check of a readable characteristic: byte for byte when nothing changes it (a constant, or an
    /// initial value no central can write and the behaviour never changes: `isSteady`), else by its fields; nil for
    /// a value that changes with no layout to hold it to.
    private static func value(
        of characteristic: Characteristic, seen: ProbeCharacteristic, isSteady: Bool
    ) -> Verification.Check? {
        guard characteristic.properties.contains(.read) else { return nil }
        if characteristic.value.isCached || isSteady {
            return compare(
                characteristic.value.bytes, with: seen.read, subject: characteristic.id,
                readSecurity: characteristic.effectiveSecurity[.read])
        }
        guard let layout = characteristic.layout else { return nil }
        let fields = layout.fields.map(\.name).joined(separator: ", ")
        switch seen.read {
        case .value(let value)?:
            let bytes = Hex.bytes(value.hex) ?? []
            return .init(
                .value, characteristic.id, "fields", layout.decode(bytes) == nil ? .fail : .pass,
                expected: "a value with the fields \(fields)", actual: value.hex.isEmpty ? "empty" : value.hex)
        case .failure(let failure)?:
            return refused(
                failure, subject: characteristic.id, expected: "a value with the fields \(fields)",
                readSecurity: characteristic.effectiveSecurity[.read])
        case nil:
            return .init(
                .value, characteristic.id, "fields", .skip, expected: "a value with the fields \(fields)",
                actual: "not read (the link dropped first)")
        }
    }

    /// The most a Read Response carries at the smallest ATT_MTU (23, less its opcode: Core 5.4 Vol 3 Part F 3.2.8
    /// and 3.4.4.4). A longer value may need Read Blob Requests to be read whole, which bluetoothd's client sends
    /// while each response fills ATT_MTU − 1 (src/shared/gatt-client.c `read_long_cb`, 5.66 to 5.87).
    static let shortestReadResponse = 22

    /// `bytes` against a read, for a constant value or descriptor. A long value read short, or refused with an error
    /// only a Read Blob Request gets, says so: the device does not read it whole.
    private static func compare(
        _ bytes: [UInt8], with read: ProbeRead?, subject: String, readSecurity: SecurityLevel
    ) -> Verification.Check {
        let isLong = bytes.count > shortestReadResponse
        let expected = shown(bytes) + (isLong ? " (\(bytes.count) bytes, read whole)" : "")
        switch read {
        case .value(let value)?:
            let seen = Hex.bytes(value.hex) ?? []
            if seen == bytes { return .init(.value, subject, "value", .pass, expected: expected, actual: shown(seen)) }
            let cut =
                isLong && seen.count >= shortestReadResponse && bytes.starts(with: seen)
                ? " (the first \(seen.count) of its \(bytes.count) bytes: the read of a long value stopped short)" : ""
            return .init(.value, subject, "value", .fail, expected: expected, actual: shown(seen) + cut)
        case .failure(let failure)?:
            if isLong, let code = failure.attError,
                [ATTError.invalidOffset, .attributeNotLong].contains(ATTError(rawValue: code))
            {
                return .init(
                    .value, subject, "value", .fail, expected: expected,
                    actual: "read refused with \(ATTError(rawValue: code)), which only a Read Blob Request gets: the "
                        + "device does not read a long value whole")
            }
            return refused(failure, subject: subject, expected: expected, readSecurity: readSecurity)
        case nil:
            return .init(
                .value, subject, "value", .skip, expected: expected, actual: "not read (the link dropped first)")
        }
    }

    /// Bytes as a person compares them: printable UTF-8 as quoted text, anything else as hex.
    static func shown(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "empty" }
        return ProfileClone.printableText(bytes).map(quoted) ?? Hex.string(bytes, separator: "")
    }

    /// A refused read: expected when the profile asks for a link the probe did not have (a skip: pair to check
    /// the value), a failure otherwise.
    private static func refused(
        _ failure: ProbeFailure, subject: String, expected: String, readSecurity: SecurityLevel
    ) -> Verification.Check {
        let error = failure.attError.map { ATTError(rawValue: $0).description } ?? failure.name
        if readSecurity != .none {
            return .init(
                .value, subject, "value", .skip, expected: expected,
                actual:
                    "read refused with \(error): the profile's read security is \(readSecurity.name) (pair with --pair "
                    + "to check the value)")
        }
        return .init(.value, subject, "value", .fail, expected: expected, actual: "read refused with \(error)")
    }

    /// A JSON string, for names in `expected` and `actual`.
    private static func quoted(_ text: String) -> String { ProfileClone.quoted(text) }
}
