import GATTModel

// Extended advertising as bluetoothd 5.82 and the Linux kernel (6.1) send it for a connectable advertisement
// registered with `SecondaryChannel: 1M`, read from their sources and checked in the lab (docs/bluez.md):
//
// - src/advertising.c `generate_adv_data`: connectable with a secondary PHY, the name goes into the advertising
//   data, complete (0x09), and `adv_client_has_scan_response` sends no scan response: a connectable extended
//   advertisement cannot also be scannable (Core Spec Vol 6, Part B, 4.4.2.2 and 2.3.1.1: ADV_EXT_IND's
//   AdvMode is connectable or scannable, never both).
// - src/shared/ad.c `bt_ad_generate`: the same order as legacy (service UUIDs, solicit UUIDs, manufacturer data,
//   service data, name, appearance, the Data list that holds bluetoothd's Flags), no longer capped at 31 bytes
//   from 5.69 (2cb07aa66, 153aaeda2: `bt_ad_set_max_len` with the kernel's maximum). 5.66 caps it at 31 and
//   fails registration beyond.
// - `calc_max_adv_len`: the limit is `MaxAdvLen` (MGMT Read Advertising Features; 251 when the controller has
//   LE Extended Advertising, else 31) less 3 for TX power and 3 for Flags the kernel adds.
// - kernel net/bluetooth/eir.c `eir_create_adv_data` adds Flags and TX power as for legacy; hci_sync.c sends the
//   data in one LE Set Extended Advertising Data command (operation "complete"), so 251 bytes at most.
// - 5.76+ switches to extended on its own when the data passes 31 bytes (`get_adv_flags`, ea242fbf8); blemu sets
//   `SecondaryChannel` itself, so the layout does not depend on the size.
extension AdvertisingPlanner {
    /// The most advertising data one LE Set Extended Advertising Data command carries (Core Spec Vol 4, Part E,
    /// 7.8.54), and so the most the Linux kernel sends: it never fragments.
    public static let extendedLimit = 251

    /// The secondary PHY blemu registers for extended advertising: LE 1M, which every Bluetooth 5 controller
    /// with extended advertising supports (src/advertising.c `secondary_exists`).
    public static let extendedSecondaryChannel = "1M"

    /// Plans an extended advertisement: every field in the advertising data, nothing in a scan response.
    static func planExtended(
        _ advertisement: Advertisement, adapter: AdapterConditions
    ) throws(AdvertisingPlanError) -> AdvertisingPlan {
        let onAirFlags = flagsOnAir(discoverable: advertisement.isDiscoverable, adapter: adapter)
        // calc_max_adv_len: kernel-added Flags (not discoverable) and TX power come off the controller's limit;
        // bluetoothd's own Flags (discoverable) are in its data and counted there.
        let kernelFlags = advertisement.isDiscoverable ? nil : onAirFlags
        let limit =
            adapter.maximumAdvertisingDataLength - (kernelFlags == nil ? 0 : 3)
            - (advertisement.includesTxPower ? 3 : 0)

        // Everything but the name must fit: service UUIDs do not overflow here, there is no smaller PDU to fall
        // back to, so a UUID that does not fit is an error like any other field.
        let data =
            advertisement.manufacturerData.map(manufacturerStructure)
            + advertisement.serviceData.map(serviceDataStructure)
        var after = advertisement.appearance.map { [appearanceStructure($0)] } ?? []
        if advertisement.isDiscoverable, let onAirFlags {
            after.append(flagsStructure(onAirFlags, origin: .bluetoothd))
        }
        let othersCost = (data + after).map(\.cost).reduce(0, +)
        let placement = placeUUIDs(advertisement.serviceUUIDs, limit: max(0, limit - othersCost))
        guard othersCost <= limit, placement.overflow.isEmpty else {
            let uuidsCost = placeUUIDs(advertisement.serviceUUIDs, limit: Int.max).cost
            throw .extendedDataTooLong(needed: othersCost + uuidsCost, limit: limit)
        }
        let before = placement.structures(completeWhenOverflowed: true, origin: .bluetoothd) + data
        let fixedCost = othersCost + placement.cost

        // The name takes what is left, cut at a character boundary and registered cut, so bluetoothd sends it
        // complete (serialize_name marks 0x08 only when it cuts the name itself).
        let name = placeName(advertisement.localName, limit: limit - fixedCost).map { name in
            (name, nameStructure(name.advertised, type: .completeLocalName, full: name.advertised, origin: .bluetoothd))
        }
        let bluetoothdData =
            before.map { relabel($0, .bluetoothd) } + (name.map { [$0.1] } ?? [])
            + after.map { relabel($0, .bluetoothd) }
        let onAirStructures =
            (kernelFlags.map { [flagsStructure($0, origin: .kernel)] } ?? []) + bluetoothdData
            + (advertisement.includesTxPower ? [relabel(txPowerStructure(adapter.advertisingTxPower), .kernel)] : [])
        let onAir = AdvertisingLayout(advertisingStructures: onAirStructures, scanResponseStructures: [])

        let registration = AdvertisementRegistration(
            serviceUUIDs: placement.accepted, localName: name?.0.advertised, appearance: advertisement.appearance,
            includesTxPower: advertisement.includesTxPower, manufacturerData: advertisement.manufacturerData,
            serviceData: advertisement.serviceData, isDiscoverable: advertisement.isDiscoverable,
            interval: advertisement.interval, secondaryChannel: extendedSecondaryChannel)
        let budget = AdvertisingBudget(
            advertisingUsed: onAir.advertisingData.count, advertisingLimit: adapter.maximumAdvertisingDataLength,
            serviceUUIDsUsed: placement.cost, serviceUUIDsLimit: limit - othersCost, scanResponseUsed: 0,
            scanResponseLimit: 0)
        var notes: [String] = []
        if let name = name?.0, name.isShortened {
            notes.append(
                "the name \"\(advertisement.localName ?? "")\" is shortened to \"\(name.advertised)\" to fit and "
                    + "registered cut, so BlueZ marks it complete (0x09)")
        }
        if name == nil, let full = advertisement.localName, !full.isEmpty {
            notes.append("the name \"\(full)\" does not fit beside the other fields: it is not advertised")
        }
        if advertisement.isDiscoverable, onAirFlags != nil, bluetoothdData.count > 1 {
            notes.append(
                "the Flags come after the other AD structures: bluetoothd keeps them in its Data list, "
                    + "which src/shared/ad.c bt_ad_generate writes last")
        }
        // There is no Core Bluetooth rule for extended advertising (Core Bluetooth does not send it): the
        // intended layout is what BlueZ sends.
        var plan = AdvertisingPlan(
            rule: onAir, onAir: onAir, budget: budget, advertisedUUIDs: placement.accepted, overflowUUIDs: [],
            localName: name?.0.advertised, isLocalNameShortened: name?.0.isShortened ?? false,
            registration: registration, deviations: notes)
        plan.uuidPlacements = placement.steps
        plan.mode = .extended
        return plan
    }
}
