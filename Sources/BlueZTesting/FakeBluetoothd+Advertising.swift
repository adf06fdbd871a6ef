// The fake's LEAdvertisingManager1: an app's advertisement registered as bluetoothd 5.66 takes it (src/advertising.c
// `register_advertisement`, `client_ready`, `parse_manufacturer_data`), its instances, and what it says an adapter
// can send (`secondary_exists`, `get_supported_cap`). A test reads what the app advertises from
// `advertisementProperties` and `advertisementsOnAir`.
import DBus

extension FakeBluetoothd {
    func registerAdvertisement(_ arguments: [DBusValue], sender: String?) async throws -> [DBusValue] {
        guard let sender, case .objectPath(let path)? = arguments.first else {
            throw DBusError(name: BlueZ566.Error.invalidArguments, message: "Invalid arguments in method call")
        }
        let key = ApplicationKey(owner: sender, path: path)
        guard advertisements[key] == nil else {
            throw DBusError(name: BlueZ566.Error.alreadyExists, message: "Already Exists")
        }
        guard advertisements.count < Int(maximumAdvertisements) else {
            throw DBusError(name: BlueZ566.Error.notPermitted, message: "Maximum advertisements reached")
        }
        // 5.66 reads the properties through a GDBusProxy, which fetches them with Properties.GetAll.
        let reply: [DBusValue]
        do {
            reply = try await callApp(
                sender, path, BlueZ566.properties, "GetAll", [.string(BlueZ566.Interface.advertisement)])
        } catch {
            throw DBusError(name: BlueZ566.Error.failed, message: "Failed to register advertisement")
        }
        guard let properties = try? reply.first?.asVardict(),
            let type = try? properties["Type"]?.asString(), type == "peripheral" || type == "broadcast"
        else {
            throw DBusError(name: BlueZ566.Error.failed, message: "Failed to parse advertisement.")
        }
        // parse_manufacturer_data / parse_service_data: 5.66's bt_ad takes at most 31 - 2 - 2 bytes of data per
        // entry (src/shared/ad.c, BT_AD_MAX_DATA_LEN; 5.69 lifts it to the controller's), extended or not.
        let entries =
            ((try? properties["ManufacturerData"]?.asEntries()) ?? [])
            + ((try? properties["ServiceData"]?.asEntries()) ?? [])
        if entries.contains(where: { ((try? $0.value.asVariant().asBytes()) ?? []).count > 27 }) {
            throw DBusError(name: BlueZ566.Error.failed, message: "Failed to parse advertisement.")
        }
        advertisements[key] = properties
        controllerInstances.insert(key)
        advertisementRegistrations += 1
        publishInstanceCount()
        try? connection.emitPropertiesChanged(
            path: BlueZ566.adapterPath, interface: BlueZ566.Interface.advertisingManager,
            properties: ["ActiveInstances", "SupportedInstances"])
        return []
    }

    func unregisterAdvertisement(_ arguments: [DBusValue], sender: String?) throws -> [DBusValue] {
        guard let sender, case .objectPath(let path)? = arguments.first,
            advertisements.removeValue(forKey: ApplicationKey(owner: sender, path: path)) != nil
        else {
            throw DBusError(name: BlueZ566.Error.doesNotExist, message: "Does Not Exist")
        }
        controllerInstances.remove(ApplicationKey(owner: sender, path: path))
        publishInstanceCount()
        try? connection.emitPropertiesChanged(
            path: BlueZ566.adapterPath, interface: BlueZ566.Interface.advertisingManager,
            properties: ["ActiveInstances", "SupportedInstances"])
        return []
    }

    /// The registered advertisements' properties, by owner and path.
    public var advertisementProperties: [ApplicationKey: [String: DBusValue]] { advertisements }

    /// Drops every advertisement and calls its `Release()` (no reply expected), as 5.66 does when the adapter
    /// goes away (`advertisement_release`).
    public func releaseAdvertisements() {
        for key in advertisements.keys {
            callAppWithoutReply(key.owner, key.path, BlueZ566.Interface.advertisement, "Release")
        }
        advertisements = [:]
        controllerInstances = []
        publishInstanceCount()
    }

    func advertisingManagerInterface() -> Interface {
        let maximum = maximumAdvertisements
        return Interface(
            BlueZ566.Interface.advertisingManager,
            methods: [
                .returning("RegisterAdvertisement", inputs: "oa{sv}") { [weak self] arguments, context in
                    guard let self else { throw DBusError(name: BlueZ566.Error.failed, message: "stopped") }
                    return try await self.registerAdvertisement(arguments, sender: context.sender)
                },
                .returning("UnregisterAdvertisement", inputs: "o") { [weak self] arguments, context in
                    guard let self else { throw DBusError(name: BlueZ566.Error.failed, message: "stopped") }
                    return try await self.unregisterAdvertisement(arguments, sender: context.sender)
                },
            ],
            properties: [
                Property(
                    "ActiveInstances", signature: "y",
                    get: { [adapter] in .byte(adapter.state.withLock { $0.activeAdvertisements }) }),
                Property(
                    "SupportedInstances", signature: "y",
                    get: { [adapter] in .byte(maximum - adapter.state.withLock { $0.activeAdvertisements }) }),
                Property(
                    "SupportedIncludes", signature: "as", get: { .strings(["tx-power", "appearance", "local-name"]) }),
                Property(
                    "SupportedCapabilities", signature: "a{sv}",
                    get: { [hasExtendedAdvertising] in .vardict(["MaxAdvLen": .byte(hasExtendedAdvertising ? 251 : 31)])
                    }),
            ]
                + (hasExtendedAdvertising
                    ? [
                        Property(
                            "SupportedSecondaryChannels", signature: "as", get: { .strings(["1M", "2M", "Coded"]) })
                    ] : []))
    }

    func publishInstanceCount() {
        let count = UInt8(advertisements.count)
        adapter.state.withLock { $0.activeAdvertisements = count }
    }
}
