import BlueZModel
import FoundationEssentials
import GATTModel
import LocalIO

// `blemu clone`: what a central saw of a device, written as a profile that validates and runs. The
// probe's report is the only input, so the clone holds what a central can learn: the advertisement as scanned, the
// GATT tree with the properties bluetoothd's client reports, every value that could be read, and the two
// descriptors a profile declares (0x2901, 0x2904). What a profile cannot declare is left out with a comment that
// says what and why; a central cannot learn permissions, so a refused read becomes the `encryption` it implies.

/// Writes a profile (YAML text) from a probe report.
public enum ProfileClone {
    /// Where the clone came from, for its header comment.
    public struct Source: Sendable {
        /// The adapter the central used, e.g. `hci1`.
        public var adapter: String
        /// When the device was probed, as text (ISO 8601).
        public var date: String
        /// The version of the bluetoothd the central used ("5.82"); nil when it could not be told.
        public var bluez: String?
        /// A source from its parts.
        public init(adapter: String, date: String, bluez: String? = nil) {
            self.adapter = adapter
            self.date = date
            self.bluez = bluez
        }
    }

    /// A clone: the profile's text and the recordings it refers to, by file name.
    public struct Clone: Sendable, Equatable {
        /// The profile (YAML).
        public var yaml: String
        /// `time,value` CSV files of what each characteristic notified or indicated while recorded, by file name
        /// (`STEM.ID.csv`), to be written next to the profile.
        public var recordings: [String: String]
    }

    /// The profile text for `report`.
    public static func yaml(from report: ProbeReport, source: Source) -> String {
        clone(from: report, source: source, recordingStem: "clone").yaml
    }

    /// The clone of `report`. What each characteristic notified or indicated while the probe listened becomes a
    /// `time,value` CSV named after `recordingStem`, and a schedule that replays it at the times it arrived.
    public static func clone(from report: ProbeReport, source: Source, recordingStem: String) -> Clone {
        var writer = Writer(recordingStem: recordingStem)
        writer.write(report, source: source)
        return Clone(yaml: writer.lines.joined(separator: "\n") + "\n", recordings: writer.recordings)
    }

    /// Services bluetoothd publishes itself on the cloned side too, so a profile cannot (or need not) declare them:
    /// why a clone leaves `service` out, or nil when it keeps it.
    public static func skippedService(_ service: ProbeService) -> String? {
        switch BluetoothUUID(service.uuid)?.uint16 {
        case 0x1800: "GAP (0x1800) is bluetoothd's own: the clone's name and appearance come from the profile"
        case 0x1801: "GATT (0x1801) is bluetoothd's own"
        case 0x180A where service.characteristics.allSatisfy({ BluetoothUUID($0.uuid)?.uint16 == 0x2A50 }):
            "Device Information with only a PnP ID (0x2A50) is what bluetoothd adds for DeviceID in main.conf"
        default: nil
        }
    }

    /// The Device Name (0x2A00) read from the GAP service, when it was readable UTF-8.
    static func gapName(_ report: ProbeReport) -> String? {
        let gap = report.services.first { BluetoothUUID($0.uuid)?.uint16 == 0x1800 }
        let name = gap?.characteristics.first { BluetoothUUID($0.uuid)?.uint16 == 0x2A00 }
        return name?.read?.value.flatMap { Hex.bytes($0.hex) }.flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// A value as the profile writes it: `{ text: ... }` for a SIG string characteristic (its key ends in
    /// `-string`, e.g. manufacturer-name-string) holding printable UTF-8, else `{ hex: ... }`.
    static func value(_ hex: String, uuid: String) -> String {
        let isString = BluetoothUUID(uuid).flatMap(AssignedNumber.entry(for:))?.key.hasSuffix("-string") == true
        if isString, let text = Hex.bytes(hex).flatMap(printableText) { return "{ text: \(quoted(text)) }" }
        return "{ hex: \"\(hex)\" }"
    }

    /// `bytes` as text when they are UTF-8 without control characters, else nil.
    static func printableText(_ bytes: [UInt8]) -> String? {
        guard let text = String(validating: bytes, as: UTF8.self),
            !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return nil }
        return text
    }

    /// The characteristic properties a profile declares, from the Flags bluetoothd's client reports: the same
    /// words, but `extended-properties` is implied by `reliable-write` and `writable-auxiliaries`.
    static func properties(_ flags: [String]) -> [String] {
        let known = [
            "broadcast", "read", "write-without-response", "write", "notify", "indicate",
            "authenticated-signed-writes", "extended-properties", "reliable-write", "writable-auxiliaries",
        ]
        var properties = known.filter(flags.contains)
        if properties.contains("reliable-write") || properties.contains("writable-auxiliaries") {
            properties.removeAll { $0 == "extended-properties" }
        }
        return properties
    }

    /// The `encryption` a refused read implies (Core Spec Vol 3, Part F, 3.4.1.1): 0x0F needs an encrypted link,
    /// 0x05 an authenticated one.
    static func readEncryption(_ failure: ProbeFailure?) -> String? {
        switch failure?.attError {
        case 0x0F: "encrypted"
        case 0x05: "authenticated"
        default: nil
        }
    }

    /// A double-quoted YAML scalar: a JSON string is one (YAML 1.2, 7.3.1 takes every JSON escape).
    static func quoted(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}

extension ProfileClone {
    /// Accumulates the profile's lines and the ids it handed out (one namespace for services and characteristics).
    struct Writer {
        let recordingStem: String
        var lines: [String] = []
        var ids: Set<String> = []
        var recordings: [String: String] = [:]
        /// Schedule blocks for what characteristics notified, written after the services.
        var schedules: [String] = []

        /// A unique id: the SIG key when the UUID has one, else `fallback`; `-2`, `-3`... when taken.
        mutating func id(for uuid: String, kind: AssignedNumber.Kind, fallback: String) -> String {
            let entry = BluetoothUUID(uuid).flatMap(AssignedNumber.entry(for:))
            let base = entry.flatMap { $0.kind == kind ? $0.key : nil } ?? fallback
            var candidate = base
            var n = 2
            while ids.contains(candidate) {
                candidate = "\(base)-\(n)"
                n += 1
            }
            ids.insert(candidate)
            return candidate
        }

        mutating func write(_ report: ProbeReport, source: Source) {
            let device = report.device
            // The GAP Device Name when the central could read it (the advertised name may be a shorter one).
            let name = ProfileClone.gapName(report) ?? device.name ?? "Clone of \(device.address)"
            lines += [
                "# Cloned by `blemu clone` from \(device.address)\(device.name.map { " (\($0))" } ?? ""), through "
                    + "bluetoothd \(source.bluez ?? "(version unknown)") on \(source.adapter), \(source.date).",
                "# What a central saw: the advertisement as scanned, the GATT tree, every value it could read.",
                "name: \(ProfileClone.quoted(name))",
            ]
            var services: [(ProbeService, String)] = []
            var serviceLines: [String] = []
            for (index, service) in report.services.enumerated() {
                if let why = ProfileClone.skippedService(service) {
                    serviceLines.append("  # skipped: service \(service.uuid): \(why)")
                    continue
                }
                let id = self.id(for: service.uuid, kind: .service, fallback: "service-\(index + 1)")
                services.append((service, id))
                serviceLines += serviceBlock(service, id: id, index: index + 1)
            }
            lines += advertisement(device, published: services)
            // Comments alone under `services:` would leave it null: a device with only bluetoothd's services gets [].
            lines.append(services.isEmpty ? "services: []" : "services:")
            lines += serviceLines
            if !schedules.isEmpty {
                lines += ["behaviour:", "  schedules:"] + schedules
            }
        }

        /// The recording of `characteristic` as CSV (seconds since the central subscribed, hex value), and a
        /// schedule that replays it at those times from each first subscription, again and again.
        mutating func record(_ characteristic: ProbeCharacteristic, id: String, properties: [String]) {
            let values = characteristic.notifications
            guard !values.isEmpty else { return }
            let file = "\(recordingStem).\(id).csv"
            recordings[file] =
                "time,value\n"
                + values.map { "\(String(cFormat: "%.3f", $0.at ?? 0)),\($0.hex)" }.joined(separator: "\n")
                + "\n"
            let action = properties.contains("notify") ? "notify" : "indicate"
            let span = String(cFormat: "%.1f", (values.last?.at ?? 0) - (values.first?.at ?? 0))
            schedules += [
                "    # recorded: \(values.count) values in \(span) s; sent at the times they arrived, counted from "
                    + "the first subscription, then again",
                "    - characteristic: \(id)", "      action: \(action)",
                "      start: first-subscription",
                "      value: { replay: { file: \(file), format: hex, repeats: true } }",
            ]
        }

        func advertisement(_ device: ProbeDevice, published: [(ProbeService, String)]) -> [String] {
            var block = ["advertisement:"]
            if let name = device.name { block.append("  local-name: \(ProfileClone.quoted(name))") }
            var advertised: [String] = []
            for uuid in device.uuids {
                if let (_, id) = published.first(where: {
                    $0.0.isPrimary && BluetoothUUID($0.0.uuid) == BluetoothUUID(uuid)
                }) {
                    advertised.append(id)
                } else {
                    block.append("  # not advertised here: \(uuid), which the clone publishes no primary service for")
                }
            }
            if !advertised.isEmpty { block.append("  service-uuids: [\(advertised.joined(separator: ", "))]") }
            if let appearance = device.appearance {
                block.append("  appearance: 0x" + Hex.word(UInt16(truncatingIfNeeded: appearance)))
            }
            if let data = device.manufacturerData, !data.isEmpty {
                block.append("  manufacturer-data:")
                for (company, hex) in data.sorted(by: { $0.key < $1.key }) {
                    block.append("    - { company: 0x\(company), data: { hex: \"\(hex)\" } }")
                }
            }
            if let data = device.serviceData, !data.isEmpty {
                block.append("  service-data:")
                for (uuid, hex) in data.sorted(by: { $0.key < $1.key }) {
                    block.append("    - { uuid: \(uuid), data: { hex: \"\(hex)\" } }")
                }
            }
            if device.txPower != nil { block.append("  tx-power: true") }
            // The scanned name is the whole name a central learned; send it whole rather than cut to 8 bytes.
            if device.name != nil { block.append("  scan-response: full") }
            return block
        }

        mutating func serviceBlock(_ service: ProbeService, id: String, index: Int) -> [String] {
            var block = ["  - id: \(id)", "    uuid: \(service.uuid)"]
            if !service.isPrimary {
                block.append("    primary: false  # a secondary service: which service includes it is not known")
            }
            block.append("    characteristics:")
            for (number, characteristic) in service.characteristics.enumerated() {
                let id = self.id(
                    for: characteristic.uuid, kind: .characteristic, fallback: "characteristic-\(index)-\(number + 1)")
                block += characteristicBlock(characteristic, id: id)
                record(characteristic, id: id, properties: ProfileClone.properties(characteristic.flags))
            }
            return block
        }

        func characteristicBlock(_ characteristic: ProbeCharacteristic, id: String) -> [String] {
            let properties = ProfileClone.properties(characteristic.flags)
            var block = [
                "      - id: \(id)", "        uuid: \(characteristic.uuid)",
                "        properties: [\(properties.joined(separator: ", "))]",
            ]
            let isConstant = !properties.contains { $0 != "read" && $0 != "broadcast" }
            switch characteristic.read {
            case .value(let value)?:
                let bytes = value.hex.count / 2
                // Core Spec Vol 3, Part F, 3.2.9: an attribute value holds at most 512 bytes.
                if bytes > 512 {
                    block.append("        # no value: \(bytes) bytes, more than the 512 a profile holds")
                } else if !isConstant, let fields = ProfileClone.fieldLines(uuid: characteristic.uuid, hex: value.hex) {
                    block += fields
                    // A writable value of a fixed-size SIG layout: a longer write is one the device would refuse.
                    if properties.contains(where: { $0.hasPrefix("write") }),
                        let length = ProfileClone.fixedLength(uuid: characteristic.uuid, hex: value.hex)
                    {
                        block.append("        max-length: \(length)  # the SIG layout's fixed size")
                    }
                } else {
                    block.append(
                        "        \(isConstant ? "value" : "initial"): "
                            + ProfileClone.value(value.hex, uuid: characteristic.uuid))
                }
            case .failure(let failure)?:
                let code = failure.attError.map { " (ATT 0x" + Hex.byte($0) + ")" } ?? ""
                block.append("        # no value: the read was refused\(code): \(failure.name): \(failure.message)")
                if let level = ProfileClone.readEncryption(failure) {
                    block.append("        encryption: { read: \(level) }")
                } else if failure.attError != 0x02 {
                    // bluetoothd's client answers Insufficient Encryption by pairing; a pairing that fails ends
                    // the read with 0x0E, and the link may drop for the reads after it.
                    block.append(
                        "        # (not a refusal a profile declares: the link or a pairing failed on the way; "
                            + "clone with a paired central to learn the value)")
                }
            case nil:
                // Not readable, but recorded: the first value that arrived is the value before the replay starts
                // (and shows the layout), as a device's own initial value would.
                if let first = characteristic.notifications.first {
                    block.append("        # value: the first one recorded")
                    block +=
                        ProfileClone.fieldLines(uuid: characteristic.uuid, hex: first.hex)
                        ?? ["        initial: " + ProfileClone.value(first.hex, uuid: characteristic.uuid)]
                }
            }
            var descriptors: [String] = []
            for descriptor in characteristic.descriptors {
                switch BluetoothUUID(descriptor.uuid)?.uint16 {
                case 0x2902, 0x2900:
                    descriptors.append("          # skipped: descriptor \(descriptor.uuid) is bluetoothd's own")
                case 0x2901:
                    if let hex = descriptor.read?.value?.hex, let bytes = Hex.bytes(hex),
                        let text = String(validating: bytes, as: UTF8.self)
                    {
                        descriptors.append("          - user-description: \(ProfileClone.quoted(text))")
                    } else {
                        descriptors.append("          # skipped: a user description that could not be read as text")
                    }
                case 0x2904:
                    if let hex = descriptor.read?.value?.hex, let bytes = Hex.bytes(hex), bytes.count == 7 {
                        let unit = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
                        let description = UInt16(bytes[5]) | UInt16(bytes[6]) << 8
                        descriptors.append(
                            "          - presentation-format: { format: \(bytes[0]), exponent: \(Int8(bitPattern: bytes[1])), "
                                + "unit: 0x\(Hex.word(unit)), "
                                + "namespace: \(bytes[4]), description: 0x\(Hex.word(description)) }")
                    } else {
                        descriptors.append("          # skipped: a presentation format that is not 7 readable bytes")
                    }
                default:
                    if let hex = descriptor.read?.value?.hex {
                        descriptors.append("          - { uuid: \(descriptor.uuid), value: { hex: \"\(hex)\" } }")
                    } else {
                        descriptors.append(
                            "          # skipped: descriptor \(descriptor.uuid), which could not be read")
                    }
                }
            }
            // Comments alone under `descriptors:` would leave it null: the key goes in only with an item.
            if descriptors.contains(where: { $0.hasPrefix("          -") }) {
                block.append("        descriptors:")
                block += descriptors
            } else {
                block += descriptors.map { "        " + $0.dropFirst(10) }
            }
            return block
        }
    }
}
