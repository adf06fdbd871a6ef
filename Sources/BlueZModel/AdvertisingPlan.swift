import GATTModel

/// The advertising planner's answer: the intended layout, the exact bytes BlueZ will program, what fit, and
/// what the engine must register with `LEAdvertisingManager1` so that the prediction holds.
///
/// `advertisingData` and `scanResponse` are the **predicted on-air bytes** (bluetoothd 5.66 + Linux kernel);
/// `rule` is the layout under the Core Bluetooth rule. Where BlueZ cannot reproduce the rule, `deviations` says
/// why, citing the BlueZ or kernel function responsible.
public struct AdvertisingPlan: Hashable, Sendable {
    /// The layout under the Core Bluetooth rule: Flags first, UUID lists with correct completeness, name rules.
    public var rule: AdvertisingLayout
    /// The layout bluetoothd and the kernel will actually program for `registration` (see AdvertisingPlanner.swift).
    public var onAir: AdvertisingLayout
    /// How much of each budget is used.
    public var budget: AdvertisingBudget
    /// The service UUIDs that fit, in priority order: the engine registers exactly these as `ServiceUUIDs`.
    public var advertisedUUIDs: [BluetoothUUID]
    /// The service UUIDs that did not fit, in priority order (Core Bluetooth's "overflow" list).
    public var overflowUUIDs: [BluetoothUUID]
    /// The local name as the rule advertises it, possibly shortened; nil when there is none.
    public var localName: String?
    /// Whether `localName` is a shortened prefix of the profile's name.
    public var isLocalNameShortened: Bool
    /// The properties the engine must register so that bluetoothd programs `onAir`.
    public var registration: AdvertisementRegistration
    /// Where the on-air bytes differ from the rule and why; empty when they agree structure for structure.
    public var deviations: [String]
    /// How each service UUID was placed, in the profile's priority order (first fit: a UUID that does not fit
    /// overflows, and a later, shorter one may still take the room left).
    public var uuidPlacements: [UUIDPlacementStep] = []
    /// Legacy or extended advertising: which PDUs carry `onAir`.
    public var mode: AdvertisingMode = .legacy

    /// One service UUID's placement: what it needed, what was left when its turn came, and whether it fit.
    public struct UUIDPlacementStep: Hashable, Sendable {
        /// The UUID.
        public var uuid: BluetoothUUID
        /// Bytes it needed: its width, plus 2 when it opens its width's list.
        public var needed: Int
        /// Bytes of the service-UUID budget left when its turn came.
        public var left: Int
        /// Whether it is advertised (else it overflowed).
        public var fits: Bool { needed <= left }
    }

    /// The predicted bytes of the advertising PDU's AdvData (at most 31; in extended mode, AUX_ADV_IND's).
    public var advertisingData: [UInt8] { onAir.advertisingData }
    /// The predicted bytes of the scan response's ScanRspData (at most 31).
    public var scanResponse: [UInt8] { onAir.scanResponse }
    /// The predicted AD structures of the advertising data, in on-air order.
    public var advertisingStructures: [ADStructure] { onAir.advertisingStructures }
    /// The predicted AD structures of the scan response, in on-air order.
    public var scanResponseStructures: [ADStructure] { onAir.scanResponseStructures }

    /// A plan from its parts; normally made by `AdvertisingPlanner.plan(_:adapter:)`.
    public init(
        rule: AdvertisingLayout, onAir: AdvertisingLayout, budget: AdvertisingBudget, advertisedUUIDs: [BluetoothUUID],
        overflowUUIDs: [BluetoothUUID], localName: String?, isLocalNameShortened: Bool,
        registration: AdvertisementRegistration, deviations: [String]
    ) {
        self.rule = rule
        self.onAir = onAir
        self.budget = budget
        self.advertisedUUIDs = advertisedUUIDs
        self.overflowUUIDs = overflowUUIDs
        self.localName = localName
        self.isLocalNameShortened = isLocalNameShortened
        self.registration = registration
        self.deviations = deviations
    }
}

/// Two lists of AD structures: one for the advertising PDU, one for the scan response.
public struct AdvertisingLayout: Hashable, Sendable {
    /// The AD structures of the advertising data, in order.
    public var advertisingStructures: [ADStructure]
    /// The AD structures of the scan response, in order.
    public var scanResponseStructures: [ADStructure]

    /// A layout from its structures.
    public init(advertisingStructures: [ADStructure], scanResponseStructures: [ADStructure]) {
        self.advertisingStructures = advertisingStructures
        self.scanResponseStructures = scanResponseStructures
    }

    /// The advertising data bytes: the structures' bytes back to back.
    public var advertisingData: [UInt8] { advertisingStructures.flatMap(\.bytes) }
    /// The scan response bytes: the structures' bytes back to back.
    public var scanResponse: [UInt8] { scanResponseStructures.flatMap(\.bytes) }
}

/// Bytes used against each budget of the legacy advertisement.
public struct AdvertisingBudget: Hashable, Sendable {
    /// The legacy AdvData limit (Core Spec Vol 6, Part B, 2.3.1.1: 31 bytes).
    public static let legacyLimit = 31
    /// The Core Bluetooth rule's share of the ADV for service UUIDs (and, on Apple, the name): 31 minus 3 for Flags.
    public static let nameAndUUIDsLimit = 28

    /// Bytes of advertising data used, headers included (limit `advertisingLimit`).
    public var advertisingUsed: Int
    /// The advertising data limit: `legacyLimit`, or in extended mode what the controller takes.
    public var advertisingLimit: Int
    /// Bytes used by the service UUID lists, headers included.
    public var serviceUUIDsUsed: Int
    /// Bytes the UUID lists could use: `nameAndUUIDsLimit`, less what other fields left of the 31.
    public var serviceUUIDsLimit: Int
    /// Bytes of scan response used, headers included.
    public var scanResponseUsed: Int
    /// The scan response budget: 10 under the Core Bluetooth rule, 31 with `.full`, 0 in extended mode.
    public var scanResponseLimit: Int

    /// A budget from its parts.
    public init(
        advertisingUsed: Int, advertisingLimit: Int = legacyLimit, serviceUUIDsUsed: Int, serviceUUIDsLimit: Int,
        scanResponseUsed: Int, scanResponseLimit: Int
    ) {
        self.advertisingUsed = advertisingUsed
        self.advertisingLimit = advertisingLimit
        self.serviceUUIDsUsed = serviceUUIDsUsed
        self.serviceUUIDsLimit = serviceUUIDsLimit
        self.scanResponseUsed = scanResponseUsed
        self.scanResponseLimit = scanResponseLimit
    }
}

/// What the engine registers as `org.bluez.LEAdvertisement1` properties, as model values (the BlueZ module spells
/// the D-Bus names). Registering exactly this, and nothing else, is what makes the plan's prediction hold.
public struct AdvertisementRegistration: Hashable, Sendable {
    /// `Type`: always a connectable peripheral advertisement (bluetoothd sets MGMT_ADV_FLAG_CONNECTABLE).
    public var isPeripheral: Bool
    /// `ServiceUUIDs`: only the UUIDs that fit. Spell them short (4 or 8 hex digits): bluetoothd's
    /// `bt_string_to_uuid` (lib/uuid.c) shortens only `0000xxxx-` base UUIDs, so a 32-bit UUID written out in full
    /// would cost 16 bytes.
    public var serviceUUIDs: [BluetoothUUID]
    /// `LocalName`: the name bluetoothd writes into the scan response; nil to leave the property out.
    public var localName: String?
    /// `Appearance`: put into the ADV by bluetoothd; never via `Includes: appearance` (see AdvertisingPlanner.swift).
    public var appearance: UInt16?
    /// `Includes: ["tx-power"]`: the kernel appends the controller's TX power to the ADV.
    public var includesTxPower: Bool
    /// `ManufacturerData`, in this order (a{qv}: order of the dictionary entries is kept by bluetoothd).
    public var manufacturerData: [ManufacturerData]
    /// `ServiceData`, in this order.
    public var serviceData: [ServiceData]
    /// `Discoverable`: always registered explicitly, so the Flags do not depend on the adapter's own Discoverable.
    public var isDiscoverable: Bool
    /// `MinInterval`/`MaxInterval` in milliseconds, when the profile asks for them.
    public var interval: ClosedRange<Double>?
    /// `SecondaryChannel` ("1M" for extended advertising), nil to leave it out (legacy). Connectable with a
    /// secondary channel, bluetoothd puts the name in the advertising data and sends no scan response
    /// (src/advertising.c `generate_adv_data`, `adv_client_has_scan_response`).
    public var secondaryChannel: String?

    /// A registration from its parts.
    public init(
        isPeripheral: Bool = true, serviceUUIDs: [BluetoothUUID], localName: String?, appearance: UInt16?,
        includesTxPower: Bool, manufacturerData: [ManufacturerData], serviceData: [ServiceData],
        isDiscoverable: Bool, interval: ClosedRange<Double>?, secondaryChannel: String? = nil
    ) {
        self.isPeripheral = isPeripheral
        self.serviceUUIDs = serviceUUIDs
        self.localName = localName
        self.appearance = appearance
        self.includesTxPower = includesTxPower
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.isDiscoverable = isDiscoverable
        self.interval = interval
        self.secondaryChannel = secondaryChannel
    }
}

/// The adapter facts that change what bluetoothd and the kernel add around the registered data.
public struct AdapterConditions: Hashable, Sendable {
    /// Whether BR/EDR is enabled on the controller (dual-mode adapters: yes). Off adds "BR/EDR Not Supported".
    public var isBREDREnabled: Bool
    /// The adapter's own `Discoverable` (BR/EDR inquiry scan); blemu leaves it off.
    public var isAdapterDiscoverable: Bool
    /// The controller's advertising TX power in dBm, which the kernel writes for `tx-power`.
    public var advertisingTxPower: Int8
    /// The most advertising data the adapter takes (`LEAdvertisingManager1.SupportedCapabilities.MaxAdvLen`):
    /// 31 for a legacy-only controller, up to 251 (`AdvertisingPlanner.extendedLimit`) for extended advertising.
    public var maximumAdvertisingDataLength: Int

    /// Conditions from their parts; the defaults are blemu's usual setup (dual-mode, adapter not discoverable) on
    /// a controller that takes the most extended advertising data the kernel sends.
    public init(
        isBREDREnabled: Bool = true, isAdapterDiscoverable: Bool = false, advertisingTxPower: Int8 = 0,
        maximumAdvertisingDataLength: Int = AdvertisingPlanner.extendedLimit
    ) {
        self.isBREDREnabled = isBREDREnabled
        self.isAdapterDiscoverable = isAdapterDiscoverable
        self.advertisingTxPower = advertisingTxPower
        self.maximumAdvertisingDataLength = maximumAdvertisingDataLength
    }
}

/// Why an advertisement cannot be planned as a legacy advertisement. Each case is something the profile must change.
public enum AdvertisingPlanError: Error, Hashable, Sendable {
    /// The fields that cannot overflow (Flags, appearance, manufacturer data, service data, TX power) need more
    /// than the 31-byte legacy ADV: registering it would fail in bluetoothd 5.66 and switch to extended
    /// advertising (invisible to legacy scanners) in BlueZ 5.69 and later.
    /// `largestField` names the biggest of them as `blemu adv` explains it, with its cost.
    case advertisingDataTooLong(needed: Int, limit: Int, largestField: String)
    /// A service UUID appears twice: bluetoothd would send it twice (src/shared/ad.c keeps every entry).
    case duplicateServiceUUID(BluetoothUUID)
    /// Two manufacturer data entries share a company identifier: bluetoothd keeps only the last one's bytes.
    case duplicateManufacturerData(companyID: UInt16)
    /// Two service data entries share a UUID: bluetoothd keeps only the last one's bytes.
    case duplicateServiceData(BluetoothUUID)
    /// The local name contains U+0000: D-Bus strings cannot carry it and bluetoothd measures names with `strlen`.
    case localNameContainsNUL
    /// An extended advertisement needs more than the controller's maximum advertising data (bluetoothd's
    /// `calc_max_adv_len`: MaxAdvLen less 3 for TX power and 3 for kernel-added Flags).
    case extendedDataTooLong(needed: Int, limit: Int)
}

extension AdvertisingPlanError: CustomStringConvertible {
    /// A one-line message with a hint.
    public var description: String {
        switch self {
        case .advertisingDataTooLong(let needed, let limit, let largestField):
            "advertising data needs \(needed) bytes, \(needed - limit) more than the \(limit) a legacy advertisement "
                + "holds; the largest field is \(largestField): shorten manufacturer or service data, drop appearance "
                + "or tx-power, or use `mode: extended` (BlueZ >= 5.69, seen only by extended scanners)"
        case .duplicateServiceUUID(let uuid):
            "service UUID \(uuid) is listed twice in the advertisement"
        case .duplicateManufacturerData(let companyID):
            "manufacturer data for company 0x\(ADStructure.hex16(companyID)) is listed twice"
        case .duplicateServiceData(let uuid):
            "service data for \(uuid) is listed twice"
        case .localNameContainsNUL:
            "the local name contains a NUL character"
        case .extendedDataTooLong(let needed, let limit):
            "extended advertising data needs \(needed) bytes but the controller takes \(limit): "
                + "shorten manufacturer or service data, or advertise fewer service UUIDs"
        }
    }
}

extension AdvertisingPlan {
    /// Who can send and who can see an extended advertisement: the line `blemu adv` prints above its bytes.
    public static let extendedReach =
        "sent by BlueZ >= 5.69 on a controller with LE Extended Advertising (Bluetooth 5; the adapter's "
        + "SupportedSecondaryChannels lists 1M); BlueZ 5.66 refuses more than 31 bytes. Seen only by centrals "
        + "that scan for extended advertising: not by phones without Bluetooth 5, Core Bluetooth where "
        + "supports(.extendedScanAndConnect) is false, or legacy-only Linux scans"

    /// A multi-line report for `blemu adv`: each PDU's hex, then one line per AD structure with its explanation.
    public var report: String {
        func section(_ title: String, _ used: Int, _ limit: Int, _ structures: [ADStructure]) -> [String] {
            let bytes = structures.flatMap(\.bytes)
            var lines = ["\(title) (\(used)/\(limit) bytes): \(ADStructure.hex(bytes))"]
            for structure in structures {
                lines.append(
                    "  \(ADStructure.hex(structure.bytes))  \(structure.explanation) [\(structure.origin.rawValue)]")
            }
            return lines
        }
        var lines: [String]
        switch mode {
        case .legacy:
            lines = section("ADV", budget.advertisingUsed, budget.advertisingLimit, advertisingStructures)
            lines += section("SCAN_RSP", budget.scanResponseUsed, budget.scanResponseLimit, scanResponseStructures)
            lines.append(
                "service UUIDs: \(budget.serviceUUIDsUsed)/\(budget.serviceUUIDsLimit) bytes, placed in priority "
                    + "order, first fit")
        case .extended:
            lines = ["extended advertising: " + Self.extendedReach]
            lines += section("AUX_ADV_IND", budget.advertisingUsed, budget.advertisingLimit, advertisingStructures)
            lines.append("SCAN_RSP: none (a connectable extended advertisement has no scan response)")
            lines.append(
                "service UUIDs: \(budget.serviceUUIDsUsed)/\(budget.serviceUUIDsLimit) bytes, every one advertised, "
                    + "in the profile's order")
        }
        var overflowed = false
        for (index, step) in uuidPlacements.enumerated() {
            let name = step.uuid.assignedName.map { "\(step.uuid) (\($0))" } ?? step.uuid.description
            let verdict =
                step.fits
                ? (overflowed ? "advertised: fits in what an overflowed UUID left" : "advertised")
                : "overflow: does not fit"
            overflowed = overflowed || !step.fits
            lines.append("  \(index + 1). \(name): \(verdict) (needs \(step.needed), \(step.left) left)")
        }
        if !overflowUUIDs.isEmpty {
            lines.append("overflow: " + overflowUUIDs.map(\.description).joined(separator: ", "))
        }
        lines += deviations.map { "note: " + $0 }
        return lines.joined(separator: "\n")
    }
}
