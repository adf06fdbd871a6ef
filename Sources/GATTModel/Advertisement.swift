/// What a peripheral advertises: the content of BlueZ's `LEAdvertisement1`, before the planner lays it out.
public struct Advertisement: Hashable, Sendable {
    /// The local name; the planner places it in the scan response.
    public var localName: String?
    /// The service UUIDs to advertise, most important first: the planner keeps this order and overflows the tail.
    public var serviceUUIDs: [BluetoothUUID]
    /// The GAP Appearance value (Assigned Numbers 2.6), e.g. 0x0341 for a heart-rate belt.
    public var appearance: UInt16?
    /// Manufacturer-specific data, keyed by company identifier, in declaration order.
    public var manufacturerData: [ManufacturerData]
    /// Service data, in declaration order.
    public var serviceData: [ServiceData]
    /// Whether to include the TX power level (bluetoothd fills in the value).
    public var includesTxPower: Bool
    /// The advertising interval range in milliseconds, when the profile asks for one.
    public var interval: ClosedRange<Double>?
    /// Whether the peripheral is general-discoverable (adds the Flags AD structure).
    public var isDiscoverable: Bool
    /// How much of the scan response the local name may use (legacy mode only).
    public var scanResponse: ScanResponsePolicy
    /// Legacy (Core Bluetooth's layout, the default) or extended advertising.
    public var mode: AdvertisingMode

    /// An advertisement from its parts.
    public init(
        localName: String? = nil, serviceUUIDs: [BluetoothUUID] = [], appearance: UInt16? = nil,
        manufacturerData: [ManufacturerData] = [], serviceData: [ServiceData] = [], includesTxPower: Bool = false,
        interval: ClosedRange<Double>? = nil, isDiscoverable: Bool = true,
        scanResponse: ScanResponsePolicy = .coreBluetooth, mode: AdvertisingMode = .legacy
    ) {
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
        self.appearance = appearance
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.includesTxPower = includesTxPower
        self.interval = interval
        self.isDiscoverable = isDiscoverable
        self.scanResponse = scanResponse
        self.mode = mode
    }
}

/// Manufacturer-specific data (AD type 0xFF): a company identifier and its bytes.
public struct ManufacturerData: Hashable, Sendable {
    /// The company identifier (Assigned Numbers 7.1), sent little-endian before the data.
    public var companyID: UInt16
    /// The company's bytes.
    public var data: [UInt8]
    /// Manufacturer data from its parts.
    public init(companyID: UInt16, data: [UInt8]) {
        self.companyID = companyID
        self.data = data
    }
}

/// Service data (AD types 0x16, 0x20, 0x21 by UUID width): a service UUID and its bytes.
public struct ServiceData: Hashable, Sendable {
    /// The service the data belongs to.
    public var uuid: BluetoothUUID
    /// The bytes.
    public var data: [UInt8]
    /// Service data from its parts.
    public init(uuid: BluetoothUUID, data: [UInt8]) {
        self.uuid = uuid
        self.data = data
    }
}

/// How the scan response is used for the local name.
public enum ScanResponsePolicy: String, Hashable, Sendable, CaseIterable {
    /// Core Bluetooth's rule: at most 10 bytes of scan response, the name shortened to fit.
    case coreBluetooth = "core-bluetooth"
    /// The whole 31-byte scan response is available to the name.
    case full
}

/// Which advertising PDUs carry the advertisement (Core Spec Vol 6, Part B, 2.3).
public enum AdvertisingMode: String, Hashable, Sendable, CaseIterable {
    /// ADV_IND with a scan response: 31 bytes each, seen by every scanner. Core Bluetooth only advertises this way.
    case legacy
    /// ADV_EXT_IND pointing to AUX_ADV_IND on the secondary channel: up to 251 bytes of advertising data in one
    /// HCI command (the kernel sends one), no scan response when connectable; seen only by scanners that scan
    /// for extended advertising (Bluetooth 5 controllers whose host asks for it).
    case extended
}
