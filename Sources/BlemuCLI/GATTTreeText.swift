import BlueZModel
import Emulation
import GATTModel
import GATTProfile

/// The text `blemu show` prints: the GATT tree with SIG names, properties, permissions, security, descriptors and
/// values decoded by their fields.
struct GATTTreeText {
    let profile: PeripheralProfile

    var rendered: String {
        var lines = ["\(profile.name)"]
        let pairing = profile.pairing
        lines.append(
            "  pairing: \(pairing.ioCapability.rawValue)"
                + (pairing.passkey.map { ", passkey \($0)" } ?? "") + (pairing.isBondable ? ", bondable" : ""))
        for service in profile.services {
            lines.append(
                "  service \(service.id): \(Self.name(service.uuid))"
                    + (service.isPrimary ? "" : " (secondary)")
                    + (service.includedServiceIDs.isEmpty
                        ? "" : ", includes " + service.includedServiceIDs.joined(separator: ", ")))
            for characteristic in service.characteristics {
                lines += Self.lines(for: characteristic).map { "    " + $0 }
            }
        }
        lines += BehaviourText(behaviour: profile.behaviour).lines
        return lines.joined(separator: "\n")
    }

    static func name(_ uuid: BluetoothUUID) -> String {
        uuid.assignedName.map { "\(uuid) \($0)" } ?? uuid.description
    }

    static func lines(for characteristic: Characteristic) -> [String] {
        var lines = ["characteristic \(characteristic.id): \(name(characteristic.uuid))"]
        lines.append("  properties: " + list(characteristic.properties.names))
        lines.append("  permissions: " + list(characteristic.permissions.names))
        let security = characteristic.effectiveSecurity
        let required = AttributeOperation.allCases.filter { security[$0] != .none }
        if !required.isEmpty {
            lines.append(
                "  security: " + required.map { "\($0.rawValue) \(security[$0].name)" }.joined(separator: ", "))
        }
        lines.append("  bluez flags: " + characteristic.bluezFlags.map(\.rawValue).joined(separator: " "))
        let value = characteristic.value
        let kind = value.isCached ? "cached" : "initial"
        lines.append(
            "  value (\(kind), \(value.bytes.count) byte\(value.bytes.count == 1 ? "" : "s"), max \(characteristic.maximumLength)): "
                + (value.bytes.isEmpty ? "empty" : hex(value.bytes)))
        if let layout = characteristic.layout, let fields = layout.decode(value.bytes) {
            for (spec, field) in zip(layout.fields, fields) {
                lines.append("    \(spec.name) (\(spec.type.name)): \(field.displayText)")
            }
        } else if let text = printableText(value.bytes) {
            lines.append("    text: \"\(text)\"")
        }
        for descriptor in characteristic.descriptors {
            lines.append(
                "  descriptor \(name(descriptor.uuid)): \(describe(descriptor))"
                    + " [" + descriptor.bluezFlags.map(\.rawValue).joined(separator: " ") + "]")
        }
        return lines
    }

    static func describe(_ descriptor: Descriptor) -> String {
        switch descriptor.uuid {
        case .characteristicUserDescription:
            return "\"\(String(decoding: descriptor.value, as: UTF8.self))\""
        case .characteristicPresentationFormat:
            guard let format = PresentationFormat(bytes: descriptor.value) else { return hex(descriptor.value) }
            return "format 0x\(Hex.byte(format.format)), exponent \(format.exponent), unit 0x"
                + String(format.unit, radix: 16, uppercase: true)
        default:
            return hex(descriptor.value)
        }
    }

    static func list(_ names: [String]) -> String { names.isEmpty ? "none" : names.joined(separator: ", ") }

    static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes) }

    /// The value as text when it is printable UTF-8, so string characteristics read as strings.
    static func printableText(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self),
            text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        else { return nil }
        return text
    }
}
