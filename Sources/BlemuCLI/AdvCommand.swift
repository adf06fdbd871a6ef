import ArgumentParser
import BlueZModel
import GATTModel
import Serving

/// `blemu adv FILE`: the advertising plan of a profile, byte for byte.
struct AdvCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adv",
        abstract: "Print the advertising and scan-response bytes a profile will send.",
        discussion: """
            Lays out the legacy advertisement under Core Bluetooth's rule (28 bytes for the name and service \
            UUIDs, 10 more of scan response for the name) and predicts the exact bytes bluetoothd 5.66 programs. \
            Each AD structure is explained. Service UUIDs are placed in priority order, first fit: one that does \
            not fit overflows, and a later, shorter one may still take the room; each UUID's line says what it \
            needed and what was left.

            With `mode: extended` it lays out the extended advertisement as BlueZ 5.69 and later send it: every \
            field in one advertising data of up to 251 bytes (the controller's MaxAdvLen may be less), the name \
            included, no scan response; the first line says which BlueZ versions and controllers can send it and \
            which centrals can see it.

            Example:
              blemu adv profiles/heart-rate.yaml
              blemu adv --json profiles/transfer.yaml
            """)

    @Argument(help: "A profile file (YAML).")
    var file: String

    @Flag(help: "Print the mode, the ADV and SCAN_RSP bytes as hex strings and the overflowed UUIDs, as JSON.")
    var json = false

    /// The JSON form: what scripts need to compare with a capture.
    struct PlanJSON: Encodable {
        /// `legacy` or `extended`.
        let mode: String
        /// The advertising data limit: 31, or in extended mode the 251 bytes one HCI command carries.
        let advLimit: Int
        /// In extended mode, which BlueZ versions and controllers can send it and which centrals see it.
        let requires: String?
        let adv: String
        let scanResponse: String
        let advertised: [String]
        let overflow: [String]
        let localName: String?
        let localNameShortened: Bool
        let placements: [Placement]

        /// One service UUID in priority order: bytes needed, bytes left at its turn, advertised or not.
        struct Placement: Encodable {
            let uuid: String
            let needed: Int
            let left: Int
            let advertised: Bool
        }
    }

    func run() throws {
        let profile = try ProfileInput.load(file)
        let plan = try ProfileInput.plan(profile, file: file)
        if json {
            try Console.printJSON(
                PlanJSON(
                    mode: plan.mode.rawValue, advLimit: plan.budget.advertisingLimit,
                    requires: plan.mode == .extended ? AdvertisingPlan.extendedReach : nil,
                    adv: Hex.string(plan.advertisingData, separator: ""),
                    scanResponse: Hex.string(plan.scanResponse, separator: ""),
                    advertised: plan.advertisedUUIDs.map(\.description),
                    overflow: plan.overflowUUIDs.map(\.description), localName: plan.localName,
                    localNameShortened: plan.isLocalNameShortened,
                    placements: plan.uuidPlacements.map {
                        .init(uuid: $0.uuid.description, needed: $0.needed, left: $0.left, advertised: $0.fits)
                    }))
        } else {
            print(plan.report)
        }
    }
}
