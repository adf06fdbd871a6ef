import BlueZModel
import ControlProtocol
import GATTModel
import GATTProfile

/// The advertisement as the control socket's `status` answers it: the bytes bluetoothd and the kernel program for the
/// profile's advertisement, each AD structure with who writes it and what it says, as `blemu adv` explains them
/// (`AdvertisingPlanner`, the prediction the lab checks against captures: docs/bluez.md, "Advertising").
enum AdvertisementJSON {
    /// `{mode, adv, scanResponse, structures: [{in, type, name, bytes, origin, explanation}], overflow, deviations}`,
    /// or `{error}` when the advertisement cannot be laid out (a profile `blemu run` refuses never gets this far).
    static func document(for advertisement: Advertisement) -> JSONValue {
        let plan: AdvertisingPlan
        do { plan = try AdvertisingPlanner.plan(advertisement) } catch {
            return .object(["error": .string("\(error)")])
        }
        func structures(_ list: [ADStructure], in part: String) -> [JSONValue] {
            list.map { structure in
                .object([
                    "in": .string(part), "type": .string(Hex.string([structure.type.rawValue], separator: "")),
                    "name": .string(structure.type.description),
                    "bytes": .string(Hex.string(structure.bytes, separator: "")),
                    "origin": .string(structure.origin.rawValue), "explanation": .string(structure.explanation),
                ])
            }
        }
        return .object([
            "mode": .string(plan.mode.rawValue),
            "adv": .string(Hex.string(plan.advertisingData, separator: "")),
            "scanResponse": .string(Hex.string(plan.scanResponse, separator: "")),
            "structures": .array(
                structures(plan.advertisingStructures, in: "adv")
                    + structures(plan.scanResponseStructures, in: "scan-response")),
            "overflow": .array(plan.overflowUUIDs.map { .string($0.description) }),
            "deviations": .array(plan.deviations.map(JSONValue.string)),
        ])
    }
}
