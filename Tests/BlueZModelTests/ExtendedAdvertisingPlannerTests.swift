import BlueZModel
import Testing

@testable import GATTModel

/// Extended advertising as bluetoothd 5.82 sends it (AdvertisingPlanner+Extended.swift). Every expected byte is
/// written by hand from the Core Specification Supplement Part A and src/shared/ad.c's order, and the first vector
/// is the one the lab saw a central receive whole (docs/bluez.md, "Advertising").
@Suite struct ExtendedAdvertisingPlannerTests {
    // 8D3A2001-6B1E-4C2F-9A57-3E2C1D0B4F61: little-endian, its 16 bytes reversed.
    static let custom = BluetoothUUID(high: 0x8D3A_2001_6B1E_4C2F, low: 0x9A57_3E2C_1D0B_4F61)
    static let customLE: [UInt8] = [
        0x61, 0x4F, 0x0B, 0x1D, 0x2C, 0x3E, 0x57, 0x9A, 0x2F, 0x4C, 0x1E, 0x6B, 0x01, 0x20, 0x3A, 0x8D,
    ]
    static let hundredBytes = (0..<100).map { UInt8($0) }
    static let name = "Extended Prototype Sensor"  // 25 bytes

    static func extended(
        name: String? = Self.name, uuids: [BluetoothUUID] = [custom], manufacturer: [UInt8] = hundredBytes,
        txPower: Bool = false, discoverable: Bool = true
    ) -> Advertisement {
        Advertisement(
            localName: name, serviceUUIDs: uuids,
            manufacturerData: [ManufacturerData(companyID: 0xFFFF, data: manufacturer)], includesTxPower: txPower,
            isDiscoverable: discoverable, mode: .extended)
    }

    @Test func aCustomServiceAHundredBytesOfManufacturerDataAndALongNameGoInOnePDU() throws {
        let plan = try AdvertisingPlanner.plan(Self.extended())
        let expected: [UInt8] =
            [0x11, 0x07] + Self.customLE  // length 17, complete list of 128-bit UUIDs
            + [0x67, 0xFF, 0xFF, 0xFF] + Self.hundredBytes  // length 103, manufacturer data, company 0xFFFF
            + [0x1A, 0x09] + Array(Self.name.utf8)  // length 26, complete local name: in the ADV, not a scan response
            + [0x02, 0x01, 0x06]  // bluetoothd's Flags, last (its Data list)
        #expect(plan.advertisingData == expected)
        #expect(plan.advertisingData.count == 152)
        #expect(plan.scanResponse.isEmpty)
        #expect(plan.mode == .extended)
        #expect(plan.budget.advertisingUsed == 152 && plan.budget.advertisingLimit == 251)
        #expect(plan.registration.secondaryChannel == "1M")
        #expect(plan.registration.localName == Self.name)
        #expect(plan.registration.serviceUUIDs == [Self.custom])
        #expect(plan.advertisedUUIDs == [Self.custom] && plan.overflowUUIDs.isEmpty)
        #expect(plan.report.contains("AUX_ADV_IND (152/251 bytes)"))
        #expect(plan.report.contains("BlueZ >= 5.69"))
    }

    @Test func aLegacyOnlyControllerTakesThirtyOneBytesAndIsTold() {
        // MaxAdvLen 31: bluetoothd 5.82 on a controller without LE Extended Advertising (the lab's btvirt -L).
        #expect(throws: AdvertisingPlanError.extendedDataTooLong(needed: 18 + 104 + 3, limit: 31)) {
            try AdvertisingPlanner.plan(
                Self.extended(), adapter: AdapterConditions(maximumAdvertisingDataLength: 31))
        }
    }

    @Test func dataPastTheControllersLimitIsRefusedWithTheBytesNeeded() {
        // 18 (UUIDs) + 244 (240 bytes of manufacturer data) + 3 (Flags) = 265 > 251.
        let advertisement = Self.extended(manufacturer: Array(repeating: 0xAB, count: 240))
        #expect(throws: AdvertisingPlanError.extendedDataTooLong(needed: 265, limit: 251)) {
            try AdvertisingPlanner.plan(advertisement)
        }
    }

    @Test func aNameThatDoesNotFitIsCutAtACharacterAndSentComplete() throws {
        // 18 + 204 + 3 = 225 bytes besides the name: 251 - 225 - 2 = 24 bytes of name are left.
        let long = "Café sensor with a very long descriptive name"
        let plan = try AdvertisingPlanner.plan(
            Self.extended(name: long, manufacturer: Array(repeating: 0, count: 200)))
        let name = try #require(plan.localName)
        #expect(name == "Café sensor with a very")  // 24 bytes: "é" is two
        #expect(Array(name.utf8).count == 24)
        #expect(plan.isLocalNameShortened)
        #expect(plan.advertisingData.count == 251)
        // UUIDs (18) and manufacturer data (204) first, then the name: length 25, complete (registered cut); the
        // Flags last.
        #expect(plan.advertisingData[222...].prefix(2) == [0x19, 0x09])
        #expect(plan.advertisingData.suffix(3) == [0x02, 0x01, 0x06])
        #expect(plan.registration.localName == name)
        #expect(plan.deviations.contains { $0.contains("shortened") })
    }

    @Test func notDiscoverableWithTxPowerLeavesFlagsToTheKernelAndPutsTxPowerLast() throws {
        // A dual-mode adapter that is not discoverable: the kernel adds no Flags (flagsOnAir is nil); TX power is
        // appended by the kernel and its 3 bytes come off the limit (calc_max_adv_len).
        let plan = try AdvertisingPlanner.plan(
            Self.extended(name: "X", uuids: [], manufacturer: [1, 2], txPower: true, discoverable: false),
            adapter: AdapterConditions(advertisingTxPower: -4))
        #expect(plan.advertisingData == [0x05, 0xFF, 0xFF, 0xFF, 0x01, 0x02, 0x02, 0x09, 0x58, 0x02, 0x0A, 0xFC])
        #expect(plan.budget.serviceUUIDsLimit == 251 - 3 - 6)
    }

    @Test func legacyModeIsUntouchedByTheExtendedPlanner() throws {
        var advertisement = Self.extended(manufacturer: [1])
        advertisement.mode = .legacy
        let plan = try AdvertisingPlanner.plan(advertisement)
        #expect(plan.mode == .legacy)
        #expect(plan.registration.secondaryChannel == nil)
        #expect(!plan.scanResponse.isEmpty)  // the name is in the scan response
        #expect(plan.budget.advertisingLimit == 31)
    }
}
