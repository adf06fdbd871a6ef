import BlueZModel
import ControlProtocol
import GATTModel
import GATTProfile
import Peripheral

/// A profile as JSON with stable keys: what `blemu show --json` prints and the control socket's `describe` answers
/// (docs/control-and-events.md). Built as a `JSONValue`, so the serving binary needs no Foundation encoder; a key
/// without a value (a UUID with no SIG name, a characteristic without fields, no fixed passkey) is left out.
public enum ProfileJSON {
    /// `{name, pairing, services: [{id, uuid, name?, primary, includes, characteristics}], behaviour}` for
    /// `profile`, its values as the profile starts them (`get` reads the current ones).
    public static func document(_ profile: PeripheralProfile) -> JSONValue {
        var pairing: [String: JSONValue] = [
            "ioCapability": .string(profile.pairing.ioCapability.rawValue),
            "bondable": .bool(profile.pairing.isBondable),
        ]
        // Six digits, as the central's user types them.
        pairing["passkey"] = profile.pairing.passkey.map { .string(PairingEvent.spelled($0)) }
        let services: [JSONValue] = profile.services.map { service in
            var members: [String: JSONValue] = [
                "id": .string(service.id), "uuid": .string(service.uuid.description),
                "primary": .bool(service.isPrimary), "includes": strings(service.includedServiceIDs),
                "characteristics": .array(service.characteristics.map(characteristic)),
            ]
            members["name"] = service.uuid.assignedName.map(JSONValue.string)
            return .object(members)
        }
        return .object([
            "name": .string(profile.name), "pairing": .object(pairing), "services": .array(services),
            // The behaviour in words (`BehaviourText.sentences`): schedules, write rules and faults; empty when none.
            "behaviour": strings(BehaviourText(behaviour: profile.behaviour).sentences),
        ])
    }

    /// One characteristic: its declaration, bluetoothd's flags for it, its starting value and decoded fields.
    static func characteristic(_ characteristic: Characteristic) -> JSONValue {
        let bytes = characteristic.value.bytes
        let security = characteristic.effectiveSecurity.levels.map {
            ($0.key.rawValue, JSONValue.string($0.value.name))
        }
        var members: [String: JSONValue] = [
            "id": .string(characteristic.id), "uuid": .string(characteristic.uuid.description),
            "properties": strings(characteristic.properties.names),
            "permissions": strings(characteristic.permissions.names),
            "security": .object(Dictionary(uniqueKeysWithValues: security)),
            "bluezFlags": strings(characteristic.bluezFlags.map(\.rawValue)),
            "cached": .bool(characteristic.value.isCached), "value": .string(Hex.string(bytes, separator: "")),
            "maxLength": .integer(Int64(characteristic.maximumLength)),
            "descriptors": .array(
                characteristic.descriptors.map { descriptor in
                    var members: [String: JSONValue] = [
                        "uuid": .string(descriptor.uuid.description),
                        "value": .string(Hex.string(descriptor.value, separator: "")),
                        "bluezFlags": strings(descriptor.bluezFlags.map(\.rawValue)),
                    ]
                    members["name"] = descriptor.uuid.assignedName.map(JSONValue.string)
                    return .object(members)
                }),
        ]
        members["name"] = characteristic.uuid.assignedName.map(JSONValue.string)
        if let layout = characteristic.layout, let values = layout.decode(bytes) {
            members["fields"] = .array(
                zip(layout.fields, values).map {
                    .object(
                        [
                            "name": .string($0.name), "type": .string($0.type.name),
                            "value": .string($1.displayText),
                        ])
                })
        }
        return .object(members)
    }

    private static func strings(_ list: [String]) -> JSONValue { .array(list.map(JSONValue.string)) }
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
