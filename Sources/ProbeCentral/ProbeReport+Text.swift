import FoundationEssentials
import GATTModel
import LocalIO

extension ProbeReport {
    /// The report as a person reads it: the device, then the GATT tree with flags, values and notifications.
    public var text: String {
        var lines: [String] = []
        let name = device.name.map { "\"\($0)\"" } ?? "(no name)"
        let rssi = device.rssi.map { ", RSSI \($0) dBm" } ?? ""
        let type = device.addressType.map { " (\($0))" } ?? ""
        lines.append("\(device.address)\(type) \(name)\(rssi), via \(adapter)")
        if !device.uuids.isEmpty { lines.append("  advertised: \(device.uuids.joined(separator: ", "))") }
        if let linkLoss { lines.append("the link dropped \(linkLoss.summary): this report is incomplete") }
        for service in services {
            let kind = service.isPrimary ? "" : " (secondary)"
            lines.append("service \(Self.label(service.uuid, service.name))\(kind)")
            for characteristic in service.characteristics {
                let flags = characteristic.flags.joined(separator: ",")
                lines.append("  \(Self.label(characteristic.uuid, characteristic.name)) [\(flags)]")
                if let read = characteristic.read { lines.append("    read: " + Self.describe(read)) }
                if let failure = characteristic.subscribeError {
                    lines.append("    subscribe failed: " + Self.describe(failure))
                } else if characteristic.canSubscribe {
                    lines.append(
                        "    \(characteristic.notifications.count) notification(s) in "
                            + "\(Self.number(listenSeconds)) s")
                    for value in characteristic.notifications {
                        let at = value.at.map { "+" + String(cFormat: "%.2f", $0) + " s " } ?? ""
                        lines.append("      \(at)" + Self.describe(value))
                    }
                }
                for descriptor in characteristic.descriptors {
                    let read = descriptor.read.map { ": " + Self.describe($0) } ?? ""
                    lines.append("    \(Self.label(descriptor.uuid, descriptor.name))\(read)")
                }
            }
        }
        lines.append(
            "found after \(Self.number(timings.found)) s, connected \(Self.number(timings.connected)) s, "
                + "resolved \(Self.number(timings.resolved)) s, done \(Self.number(timings.total)) s")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The report as pretty-printed JSON with sorted keys; encoding a report cannot fail.
    public var json: String { Self.prettyJSON(self) }

    /// `value` as the JSON blemu prints (`probe --json`, `verify --json`): pretty, keys sorted, slashes as they are.
    static func prettyJSON(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    static func label(_ uuid: String, _ name: String?) -> String { name.map { "\(uuid) \($0)" } ?? uuid }

    static func describe(_ read: ProbeRead) -> String {
        switch read {
        case .value(let value): describe(value)
        case .failure(let failure): "error " + describe(failure)
        }
    }

    static func describe(_ value: ProbeValue) -> String {
        let hex = value.hex.isEmpty ? "(empty)" : value.hex
        return value.decoded.map { "\($0)  (\(hex))" } ?? hex
    }

    static func describe(_ failure: ProbeFailure) -> String {
        let att = failure.attError.map { " [ATT 0x" + Hex.byte($0) + "]" } ?? ""
        return "\(failure.name): \(failure.message)\(att)"
    }

    static func number(_ value: Double) -> String { String(cFormat: "%.1f", value) }
}
