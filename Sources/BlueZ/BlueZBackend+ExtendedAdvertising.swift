import BlueZModel
import DBus
import GATTModel

// Extended advertising: before registering, what the adapter says it can send; after a refusal, why.
// bluetoothd publishes `SupportedSecondaryChannels` only when the kernel offers a secondary PHY, that is when the
// controller has LE Extended Advertising (src/advertising.c `secondary_exists`, 5.66 and 5.82), and
// `SupportedCapabilities.MaxAdvLen` is the kernel's maximum advertising data (MGMT Read Advertising Features:
// 31 for a legacy-only controller, 251 with extended advertising). 5.66 publishes both yet caps its own data at
// 31 bytes (src/shared/ad.c, fixed in 5.69 by 2cb07aa66 and 153aaeda2), so only the refusal tells it apart.
extension BlueZBackend {
    /// Plans `advertisement` as extended advertising for this adapter's maximum advertising data; throws
    /// `.extendedAdvertisingUnavailable` when the adapter cannot send it, or not this much of it.
    func planExtended(_ advertisement: Advertisement) async throws(BlueZError) -> AdvertisingPlan {
        let reply = try await callBlueZ(
            adapterPath, BlueZName.FreeDesktop.properties, BlueZName.FreeDesktop.getAll,
            [.string(BlueZName.Interface.advertisingManager)], operation: "GetAll LEAdvertisingManager1")
        let properties = (try? reply.first?.asVardict()) ?? [:]
        let channels = (try? properties[BlueZName.Property.supportedSecondaryChannels]?.asStrings()) ?? []
        guard channels.contains(AdvertisingPlanner.extendedSecondaryChannel) else {
            throw .extendedAdvertisingUnavailable(
                "\(adapterName) has no secondary advertising channel (LEAdvertisingManager1 lists no "
                    + "SupportedSecondaryChannels): its controller cannot send extended advertising; use "
                    + "`mode: legacy`, or a Bluetooth 5 controller with LE Extended Advertising and BlueZ >= 5.69")
        }
        let capabilities = (try? properties[BlueZName.Property.supportedCapabilities]?.asVardict()) ?? [:]
        let maximum = (try? capabilities[BlueZName.Property.maxAdvLen]?.asByte()).map(Int.init)
        let adapter = AdapterConditions(maximumAdvertisingDataLength: maximum ?? AdvertisingPlanner.extendedLimit)
        do {
            return try AdvertisingPlanner.plan(advertisement, adapter: adapter)
        } catch .extendedDataTooLong(let needed, let limit) {
            throw .extendedAdvertisingUnavailable(
                "the advertisement needs \(needed) bytes and \(adapterName) takes \(limit) (MaxAdvLen "
                    + "\(adapter.maximumAdvertisingDataLength)): shorten manufacturer or service data, or advertise "
                    + "fewer service UUIDs")
        } catch {
            throw .invalidAdvertisement(error)
        }
    }

    /// Why bluetoothd refused an extended advertisement the adapter said it could carry: 5.66's 31-byte cap is
    /// the one refusal left once `planExtended` found the adapter able, so the message names the fix.
    static func extendedRefusal(_ plan: AdvertisingPlan, operation: String, _ error: DBusError) -> BlueZError {
        let size = plan.advertisingData.count
        guard size > AdvertisingBudget.legacyLimit else { return .rejected(operation: operation, error) }
        return .extendedAdvertisingUnavailable(
            "bluetoothd refused \(size) bytes of extended advertising data (\(error.name): \(error.message)); "
                + "BlueZ before 5.69 caps advertising data at 31 bytes: use BlueZ >= 5.69, or `mode: legacy`")
    }
}
