import GATTModel

// The advertising planner: lays out a legacy advertisement (Core Spec Vol 6, Part B, 2.3.1: AdvData and
// ScanRspData, 31 bytes each) under the Core Bluetooth rule, and predicts the bytes BlueZ will really program.
//
// What bluetoothd 5.66 + the Linux kernel (6.1, Debian 12) put on the air for a registered LEAdvertisement1,
// read from their sources (facts only, no code copied):
//
// bluetoothd, src/advertising.c
// - `parse_local_name`: an empty LocalName counts as none. `LocalName` and `Includes: local-name` together fail.
// - `parse_appearance` / `parse_includes`: `Appearance` and `Includes: appearance` together fail.
//   `generate_adv_data` puts the appearance into the **advertising data** (not the scan response), from the
//   `Appearance` property; with only `Includes: appearance` it writes 0x0000 (a TODO) and also passes
//   MGMT_ADV_FLAG_APPEARANCE, so the kernel adds the adapter's appearance to the scan response as well. Hence the
//   engine registers `Appearance` and never `Includes: appearance`.
// - `generate_scan_rsp`: the LocalName always goes into the **scan response**, alone (5.66 has no other scan
//   response properties), and clears MGMT_ADV_FLAG_LOCAL_NAME so the kernel adds no name of its own. Only a
//   connectable advertisement on a secondary PHY (`SecondaryChannel`) moves the name into the ADV; the engine never
//   sets `SecondaryChannel`.
// - `parse_discoverable` -> `set_flags`: `Discoverable: true` stores a Flags AD structure **in bluetoothd's own data
//   list** with LE General Discoverable (0x02), plus BR/EDR Not Supported (0x04) when BR/EDR is disabled on the
//   adapter *or the adapter itself is not discoverable*. `Discoverable: false` stores none; then `get_adv_flags`
//   passes MGMT_ADV_FLAG_DISCOV only when the adapter is discoverable, and the kernel decides (below).
// - `calc_max_adv_len` / `refresh_legacy_adv` / `add_adv_params_callback`: bluetoothd's data must fit 31 bytes less
//   3 for tx-power and 3 for kernel-added Flags, else "Advertising data too long" and the registration fails.
//
// bluetoothd, src/shared/ad.c, `bt_ad_generate` (returns NULL, i.e. failure, when the total passes 31 in 5.66;
// from 5.69 `bt_ad_set_max_len` lifts the limit to the controller's, which means extended advertising):
//   1. service UUIDs: one structure per size, 16-bit, then 32-bit, then 128-bit, UUIDs in registration order,
//      **always the complete types 0x03/0x05/0x07** (`serialize_service_uuids`): BlueZ cannot say "incomplete";
//   2. solicit UUIDs (0x14/0x1F/0x15); 3. manufacturer data 0xFF, company ID little-endian, in order;
//   4. service data 0x16/0x20/0x21, in order; 5. the name: 0x09, or 0x08 cut **by bytes** to what is left of 31
//      (`serialize_name`, may split a UTF-8 sequence); 6. appearance 0x19; 7. the `Data` list, **which holds the
//      Flags** stored by `set_flags`: so bluetoothd's Flags come **last**, not first.
//   The `Data` property cannot carry types 0x01-0x0A, 0x16, 0x19, 0xFF... (`type_reject_list`), so there is no way
//   around 1 and 5 through D-Bus.
//
// kernel, net/bluetooth/eir.c
// - `eir_create_adv_data`: if bluetoothd's data already has Flags, adds none; else Flags = General (0x02) for
//   MGMT_ADV_FLAG_DISCOV, | BR/EDR Not Supported (0x04) when BR/EDR is disabled, **prepended** when non-zero.
//   Then bluetoothd's bytes. Then, for MGMT_ADV_FLAG_TX_POWER, `02 0A <adv tx power>` **appended** at the end
//   (only when the controller reported a valid power).
// - `eir_create_scan_rsp`: appearance first only for MGMT_ADV_FLAG_APPEARANCE (never set by this plan), then
//   bluetoothd's scan response bytes, then the adapter name only for MGMT_ADV_FLAG_LOCAL_NAME (cleared above).
//
// Consequences for the plan (each one reported in `AdvertisingPlan.deviations` when it applies):
// - a UUID class that overflowed is still sent with a complete list type by BlueZ;
// - a name shortened by the planner is registered pre-cut, so bluetoothd sends it as complete (0x09); only with
//   `.full` and a 29-byte cut on a character boundary does the plan let bluetoothd cut (and mark 0x08) itself;
// - Flags come after the other structures, not first; TX power comes after the Flags.
// Scanners do not depend on structure order (Core Spec Vol 3, Part C, 11 imposes none), so the order is cosmetic;
// the list and name types are not: an iOS central treats a complete list as "nothing else to find".

/// Plans advertisements: the Core Bluetooth layout of a legacy one (or the layout of an extended one,
/// AdvertisingPlanner+Extended.swift), the predicted BlueZ bytes, and the registration.
public enum AdvertisingPlanner {
    /// Plans an advertisement; throws when it cannot be a legacy advertisement or is ambiguous.
    ///
    /// Service UUIDs are placed first-fit in priority order: a UUID that does not fit overflows, and a later,
    /// smaller one may still fit (docs/profile-format.md; `uuidPlacements` says how each was placed). The name never makes planning fail: it is shortened at a character boundary.
    public static func plan(
        _ advertisement: Advertisement, adapter: AdapterConditions = AdapterConditions()
    ) throws(AdvertisingPlanError) -> AdvertisingPlan {
        try validate(advertisement)
        if advertisement.mode == .extended { return try planExtended(advertisement, adapter: adapter) }
        let legacyLimit = AdvertisingBudget.legacyLimit

        // Flags: the rule always leads with `02 01 06` (LE General Discoverable | BR/EDR Not Supported) when
        // discoverable. On the air the value and position depend on bluetoothd and the kernel (header comment).
        let onAirFlags = flagsOnAir(discoverable: advertisement.isDiscoverable, adapter: adapter)
        let flagsCost = onAirFlags == nil ? 0 : 3

        // Fields that never overflow, at their real cost (Supplement Part A 1.4, 1.5, 1.11, 1.12).
        let manufacturer = advertisement.manufacturerData.map(manufacturerStructure)
        let service = advertisement.serviceData.map(serviceDataStructure)
        let appearance = advertisement.appearance.map(appearanceStructure)
        let txPower = advertisement.includesTxPower ? txPowerStructure(adapter.advertisingTxPower) : nil
        let fixedCost =
            flagsCost + (manufacturer + service).map(\.cost).reduce(0, +) + (appearance?.cost ?? 0)
            + (txPower?.cost ?? 0)
        guard fixedCost <= legacyLimit else {
            let fields = manufacturer + service + (appearance.map { [$0] } ?? []) + (txPower.map { [$0] } ?? [])
            let largest = fields.max { $0.cost < $1.cost }.map { "\($0.explanation) (\($0.cost) bytes)" } ?? "Flags"
            throw .advertisingDataTooLong(needed: fixedCost, limit: legacyLimit, largestField: largest)
        }

        // Service UUIDs: what is left of the 28, first-fit in priority order, one structure per width.
        let uuidLimit = min(AdvertisingBudget.nameAndUUIDsLimit, legacyLimit - fixedCost)
        let placement = placeUUIDs(advertisement.serviceUUIDs, limit: uuidLimit)

        // The name: scan response only (generate_scan_rsp), 10 bytes under the Core Bluetooth rule, else 31.
        let scanLimit = advertisement.scanResponse == .coreBluetooth ? 10 : legacyLimit
        let name = placeName(advertisement.localName, limit: scanLimit)

        // The rule's layout.
        let ruleFlags = advertisement.isDiscoverable ? [flagsStructure(0x06, origin: .rule)] : []
        let ruleUUIDs = placement.structures(completeWhenOverflowed: false, origin: .rule)
        let others = manufacturer + service + (appearance.map { [$0] } ?? [])
        let rule = AdvertisingLayout(
            advertisingStructures: ruleFlags + ruleUUIDs + others + (txPower.map { [$0] } ?? []),
            scanResponseStructures: name.map { [$0.ruleStructure] } ?? [])

        // bluetoothd's bytes (bt_ad_generate order), then what the kernel adds around them.
        let bluezUUIDs = placement.structures(completeWhenOverflowed: true, origin: .bluetoothd)
        var bluetoothdData = bluezUUIDs + others.map { relabel($0, .bluetoothd) }
        var onAirAdvertising: [ADStructure] = []
        if let onAirFlags {
            if advertisement.isDiscoverable {
                bluetoothdData.append(flagsStructure(onAirFlags, origin: .bluetoothd))
            } else {
                onAirAdvertising.append(flagsStructure(onAirFlags, origin: .kernel))
            }
        }
        onAirAdvertising += bluetoothdData
        if let txPower { onAirAdvertising.append(relabel(txPower, .kernel)) }
        let onAir = AdvertisingLayout(
            advertisingStructures: onAirAdvertising,
            scanResponseStructures: name.map { [$0.onAirStructure] } ?? [])

        let registration = AdvertisementRegistration(
            serviceUUIDs: placement.accepted, localName: name?.registered, appearance: advertisement.appearance,
            includesTxPower: advertisement.includesTxPower, manufacturerData: advertisement.manufacturerData,
            serviceData: advertisement.serviceData, isDiscoverable: advertisement.isDiscoverable,
            interval: advertisement.interval)

        let budget = AdvertisingBudget(
            advertisingUsed: onAir.advertisingData.count, serviceUUIDsUsed: placement.cost,
            serviceUUIDsLimit: uuidLimit, scanResponseUsed: onAir.scanResponse.count, scanResponseLimit: scanLimit)

        var plan = AdvertisingPlan(
            rule: rule, onAir: onAir, budget: budget, advertisedUUIDs: placement.accepted,
            overflowUUIDs: placement.overflow, localName: name?.advertised,
            isLocalNameShortened: name?.isShortened ?? false,
            registration: registration,
            deviations: deviations(
                placement: placement, name: name, flags: onAirFlags, discoverable: advertisement.isDiscoverable,
                hasTxPower: txPower != nil, hasOthers: !bluezUUIDs.isEmpty || !others.isEmpty))
        plan.uuidPlacements = placement.steps
        return plan
    }

    // MARK: - Validation

    static func validate(_ advertisement: Advertisement) throws(AdvertisingPlanError) {
        var seenUUIDs: Set<BluetoothUUID> = []
        for uuid in advertisement.serviceUUIDs where !seenUUIDs.insert(uuid).inserted {
            throw .duplicateServiceUUID(uuid)
        }
        var seenCompanies: Set<UInt16> = []
        for entry in advertisement.manufacturerData where !seenCompanies.insert(entry.companyID).inserted {
            throw .duplicateManufacturerData(companyID: entry.companyID)
        }
        var seenServiceData: Set<BluetoothUUID> = []
        for entry in advertisement.serviceData where !seenServiceData.insert(entry.uuid).inserted {
            throw .duplicateServiceData(entry.uuid)
        }
        if advertisement.localName?.unicodeScalars.contains("\u{0}") == true { throw .localNameContainsNUL }
    }

    // MARK: - Flags

    /// The Flags byte on the air, or nil when neither bluetoothd nor the kernel adds Flags (header comment).
    static func flagsOnAir(discoverable: Bool, adapter: AdapterConditions) -> UInt8? {
        let general: UInt8 = 0x02
        let noBREDR: UInt8 = 0x04
        if discoverable {
            // set_flags (src/advertising.c): BR/EDR Not Supported when BR/EDR is off or the adapter is not.
            let needsNoBREDR = !adapter.isBREDREnabled || !adapter.isAdapterDiscoverable
            return general | (needsNoBREDR ? noBREDR : 0)
        }
        // eir_create_adv_data (net/bluetooth/eir.c): DISCOV only when the adapter is discoverable (get_adv_flags).
        let value = (adapter.isAdapterDiscoverable ? general : 0) | (adapter.isBREDREnabled ? 0 : noBREDR)
        return value == 0 ? nil : value
    }

    static func flagsStructure(_ value: UInt8, origin: ADStructure.Origin) -> ADStructure {
        var bits: [String] = []
        if value & 0x01 != 0 { bits.append("LE Limited Discoverable") }
        if value & 0x02 != 0 { bits.append("LE General Discoverable") }
        if value & 0x04 != 0 { bits.append("BR/EDR Not Supported") }
        return ADStructure(
            type: .flags, payload: [value],
            explanation: "Flags 0x\(ADStructure.hex([value])): " + bits.joined(separator: ", "), origin: origin)
    }

    // MARK: - Service UUIDs

    /// Which UUIDs fit, grouped by width in 16, 32, 128 order as bt_ad_generate writes them.
    struct UUIDPlacement: Equatable {
        var accepted: [BluetoothUUID] = []
        var overflow: [BluetoothUUID] = []
        var cost = 0
        var steps: [AdvertisingPlan.UUIDPlacementStep] = []

        /// The widths with at least one overflowed UUID: their lists are incomplete (Supplement A 1.1).
        var overflowedWidths: Set<BluetoothUUID.Width> { Set(overflow.map(\.width)) }

        func structures(completeWhenOverflowed: Bool, origin: ADStructure.Origin) -> [ADStructure] {
            [BluetoothUUID.Width.bits16, .bits32, .bits128].compactMap { width in
                let members = accepted.filter { $0.width == width }
                guard !members.isEmpty else { return nil }
                let isComplete = completeWhenOverflowed || !overflowedWidths.contains(width)
                let type = ADType.serviceUUIDList(width, isComplete: isComplete)
                let names = members.map { uuid in uuid.assignedName.map { "\(uuid) (\($0))" } ?? uuid.description }
                return ADStructure(
                    type: type, payload: members.flatMap(\.littleEndianBytes),
                    explanation: "\(type): " + names.joined(separator: ", "), origin: origin)
            }
        }
    }

    static func placeUUIDs(_ uuids: [BluetoothUUID], limit: Int) -> UUIDPlacement {
        var placement = UUIDPlacement()
        var openWidths: Set<BluetoothUUID.Width> = []
        for uuid in uuids {
            // The first UUID of a width opens its structure: 2 header bytes (length, type).
            let cost = uuid.width.byteCount + (openWidths.contains(uuid.width) ? 0 : 2)
            placement.steps.append(.init(uuid: uuid, needed: cost, left: limit - placement.cost))
            if placement.cost + cost <= limit {
                placement.accepted.append(uuid)
                placement.cost += cost
                openWidths.insert(uuid.width)
            } else {
                placement.overflow.append(uuid)
            }
        }
        return placement
    }

    // MARK: - Local name

    /// The name as the rule advertises it, as registered, and as bluetoothd will write it.
    struct NamePlacement: Equatable {
        var advertised: String
        var isShortened: Bool
        var registered: String
        var ruleStructure: ADStructure
        var onAirStructure: ADStructure
    }

    /// bluetoothd cuts the name to what is left of 31 bytes in the scan response, which holds only the name.
    static let bluetoothdNameLimit = AdvertisingBudget.legacyLimit - 2

    static func placeName(_ name: String?, limit: Int) -> NamePlacement? {
        guard let name, !name.isEmpty else { return nil }  // parse_local_name: "" is no name.
        let room = limit - 2
        // Cut at a Character boundary: never inside a UTF-8 sequence, nor between a letter and its accent.
        var advertised = ""
        var used = 0
        for character in name {
            let size = character.utf8.count
            guard used + size <= room else { break }
            advertised.append(character)
            used += size
        }
        guard !advertised.isEmpty else { return nil }
        let isShortened = advertised.utf8.count < name.utf8.count
        let ruleType: ADType = isShortened ? .shortenedLocalName : .completeLocalName
        let rule = nameStructure(advertised, type: ruleType, full: name, origin: .rule)

        // Registering the full name lets bluetoothd mark it shortened itself, but only when its byte cut at 29
        // lands exactly where ours does (serialize_name, src/shared/ad.c); otherwise register the cut name.
        let bluetoothdCutsCleanly = isShortened && used == bluetoothdNameLimit
        let registered = bluetoothdCutsCleanly ? name : advertised
        let onAirType: ADType = bluetoothdCutsCleanly ? .shortenedLocalName : .completeLocalName
        let onAir = nameStructure(advertised, type: onAirType, full: name, origin: .bluetoothd)
        return NamePlacement(
            advertised: advertised, isShortened: isShortened, registered: registered, ruleStructure: rule,
            onAirStructure: onAir)
    }

    static func nameStructure(_ text: String, type: ADType, full: String, origin: ADStructure.Origin) -> ADStructure {
        let explanation =
            type == .shortenedLocalName
            ? "\(type): \"\(text)\" (from \"\(full)\")" : "\(type): \"\(text)\""
        return ADStructure(type: type, payload: Array(text.utf8), explanation: explanation, origin: origin)
    }

    // MARK: - Other fields

    static func manufacturerStructure(_ entry: ManufacturerData) -> ADStructure {
        let company = [UInt8(truncatingIfNeeded: entry.companyID), UInt8(truncatingIfNeeded: entry.companyID >> 8)]
        return ADStructure(
            type: .manufacturerData, payload: company + entry.data,
            explanation: "Manufacturer specific data: company 0x\(ADStructure.hex16(entry.companyID)), "
                + byteCount(entry.data.count))
    }

    static func serviceDataStructure(_ entry: ServiceData) -> ADStructure {
        let name = entry.uuid.assignedName.map { " (\($0))" } ?? ""
        return ADStructure(
            type: .serviceData(entry.uuid.width), payload: entry.uuid.littleEndianBytes + entry.data,
            explanation: "Service data: \(entry.uuid)\(name), " + byteCount(entry.data.count))
    }

    static func appearanceStructure(_ value: UInt16) -> ADStructure {
        ADStructure(
            type: .appearance, payload: [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)],
            explanation: "Appearance: 0x\(ADStructure.hex16(value))")
    }

    static func txPowerStructure(_ dBm: Int8) -> ADStructure {
        ADStructure(
            type: .txPowerLevel, payload: [UInt8(bitPattern: dBm)],
            explanation: "TX power level: \(dBm) dBm (the controller's value)")
    }

    static func relabel(_ structure: ADStructure, _ origin: ADStructure.Origin) -> ADStructure {
        var copy = structure
        copy.origin = origin
        return copy
    }

    static func byteCount(_ count: Int) -> String { count == 1 ? "1 byte" : "\(count) bytes" }

    // MARK: - Deviations

    static func deviations(
        placement: UUIDPlacement, name: NamePlacement?, flags: UInt8?, discoverable: Bool, hasTxPower: Bool,
        hasOthers: Bool
    ) -> [String] {
        var notes: [String] = []
        for width in [BluetoothUUID.Width.bits16, .bits32, .bits128]
        where placement.overflowedWidths.contains(width) && placement.accepted.contains(where: { $0.width == width }) {
            notes.append(
                "the \(width.rawValue)-bit UUID list is incomplete, but BlueZ sends it as complete "
                    + "(0x\(ADStructure.hex([ADType.serviceUUIDList(width, isComplete: true).rawValue]))): "
                    + "src/shared/ad.c serialize_service_uuids writes only complete list types")
        }
        if let name, name.ruleStructure.type != name.onAirStructure.type {
            notes.append(
                "the shortened name \"\(name.advertised)\" is registered pre-cut, so BlueZ marks it complete (0x09): "
                    + "src/shared/ad.c serialize_name uses 0x08 only when it cuts the name itself")
        }
        if discoverable, let flags {
            if flags != 0x06 {
                notes.append(
                    "the Flags are 0x\(ADStructure.hex([flags])), not 0x06: src/advertising.c set_flags adds "
                        + "BR/EDR Not Supported only when BR/EDR is off or the adapter is not discoverable")
            }
            if hasOthers || hasTxPower {
                notes.append(
                    "the Flags come after the other AD structures: bluetoothd keeps them in its Data list, "
                        + "which src/shared/ad.c bt_ad_generate writes last")
            }
        } else if !discoverable, let flags {
            notes.append(
                "the kernel adds Flags 0x\(ADStructure.hex([flags])) to a non-discoverable advertisement: "
                    + "net/bluetooth/eir.c eir_create_adv_data")
        }
        return notes
    }
}
