import BlueZModel
import GATTModel
import GATTProfile
import Peripheral

/// A profile as JSON with stable keys: what `blemu show --json` prints and the control socket's `describe` answers
/// (docs/control-and-events.md).
public struct ProfileJSON: Encodable, Sendable {
    struct ServiceJSON: Encodable, Sendable {
        let id: String
        let uuid: String
        let name: String?
        let primary: Bool
        let includes: [String]
        let characteristics: [CharacteristicJSON]
    }

    struct CharacteristicJSON: Encodable, Sendable {
        let id: String
        let uuid: String
        let name: String?
        let properties: [String]
        let permissions: [String]
        let security: [String: String]
        let bluezFlags: [String]
        let cached: Bool
        let value: String
        let maxLength: Int
        let fields: [FieldJSON]?
        let descriptors: [DescriptorJSON]
    }

    struct FieldJSON: Encodable, Sendable {
        let name: String
        let type: String
        let value: String
    }

    struct DescriptorJSON: Encodable, Sendable {
        let uuid: String
        let name: String?
        let value: String
        let bluezFlags: [String]
    }

    struct PairingJSON: Encodable, Sendable {
        let ioCapability: String
        /// Six digits, as the central's user types them; nil without a fixed passkey.
        let passkey: String?
        let bondable: Bool
    }

    let name: String
    let pairing: PairingJSON
    let services: [ServiceJSON]
    /// The behaviour in words (`BehaviourText.sentences`): schedules, write rules and faults; empty when none.
    let behaviour: [String]

    /// The document for `profile`, its values as the profile starts them.
    public init(_ profile: PeripheralProfile) {
        name = profile.name
        pairing = PairingJSON(
            ioCapability: profile.pairing.ioCapability.rawValue,
            passkey: profile.pairing.passkey.map(PairingEvent.spelled), bondable: profile.pairing.isBondable)
        services = profile.services.map { service in
            ServiceJSON(
                id: service.id, uuid: service.uuid.description, name: service.uuid.assignedName,
                primary: service.isPrimary, includes: service.includedServiceIDs,
                characteristics: service.characteristics.map(Self.characteristic))
        }
        behaviour = BehaviourText(behaviour: profile.behaviour).sentences
    }

    static func characteristic(_ characteristic: Characteristic) -> CharacteristicJSON {
        let security = characteristic.effectiveSecurity
        let bytes = characteristic.value.bytes
        let fields = characteristic.layout.flatMap { layout in
            layout.decode(bytes).map { values in
                zip(layout.fields, values).map {
                    FieldJSON(name: $0.name, type: $0.type.name, value: $1.displayText)
                }
            }
        }
        return CharacteristicJSON(
            id: characteristic.id, uuid: characteristic.uuid.description, name: characteristic.uuid.assignedName,
            properties: characteristic.properties.names, permissions: characteristic.permissions.names,
            security: Dictionary(uniqueKeysWithValues: security.levels.map { ($0.key.rawValue, $0.value.name) }),
            bluezFlags: characteristic.bluezFlags.map(\.rawValue), cached: characteristic.value.isCached,
            value: Hex.string(bytes, separator: ""), maxLength: characteristic.maximumLength,
            fields: fields,
            descriptors: characteristic.descriptors.map {
                DescriptorJSON(
                    uuid: $0.uuid.description, name: $0.uuid.assignedName,
                    value: Hex.string($0.value, separator: ""), bluezFlags: $0.bluezFlags.map(\.rawValue))
            })
    }
}

extension FieldValue {
    /// The value as `blemu show` prints it: numbers and booleans as written, flags by name (or "none"), text
    /// quoted, bytes in hex.
    public var displayText: String {
        switch self {
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .boolean(let flag): String(flag)
        case .flags(let names): names.isEmpty ? "none" : names.joined(separator: ", ")
        case .text(let text): "\"\(text)\""
        case .bytes(let bytes): Hex.string(bytes)
        }
    }
}
