import BlueZModel
import Testing

@testable import GATTModel

/// Every expected byte below is written by hand from the Core Specification Supplement Part A and the BlueZ 5.66
/// behaviour described in AdvertisingPlanner.swift, not computed by the code under test.
@Suite struct AdvertisingPlannerTests {
    static let heartRate = BluetoothUUID(0x180D)
    static let battery = BluetoothUUID(0x180F)
    // A custom service; its little-endian bytes are the string's 16 bytes reversed.
    static let custom = BluetoothUUID(high: 0xE71E_E188_279F_4ED6, low: 0x8055_12D7_7BFD_900C)  // e71ee188-279f-...
    static let customLE: [UInt8] = [
        0x0C, 0x90, 0xFD, 0x7B, 0xD7, 0x12, 0x55, 0x80, 0xD6, 0x4E, 0x9F, 0x27, 0x88, 0xE1, 0x1E, 0xE7,
    ]
    // Nordic UART Service, a second custom 128-bit UUID.
    static let nordicUART = BluetoothUUID(high: 0x6E40_0001_B5A3_F393, low: 0xE0A9_E50E_24DC_CA9E)

    @Test func heartRateAndBatteryWithAShortNameFitWithRoomToSpare() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(localName: "HR Belt", serviceUUIDs: [Self.heartRate, Self.battery]))

        // The rule: Flags first, then one complete 16-bit list.
        #expect(
            plan.rule.advertisingData == [
                0x02, 0x01, 0x06,  // length 2, Flags, LE General Discoverable | BR/EDR Not Supported
                0x05, 0x03, 0x0D, 0x18, 0x0F, 0x18,  // length 5, complete 16-bit list, 180D, 180F little-endian
            ])
        // On the air: bluetoothd writes the UUIDs, then the Flags it keeps in its Data list (set_flags).
        #expect(plan.advertisingData == [0x05, 0x03, 0x0D, 0x18, 0x0F, 0x18, 0x02, 0x01, 0x06])
        // Scan response: length 8 (type + 7), Complete Local Name, "HR Belt".
        #expect(plan.scanResponse == [0x08, 0x09, 0x48, 0x52, 0x20, 0x42, 0x65, 0x6C, 0x74])
        #expect(plan.rule.scanResponse == plan.scanResponse)
        #expect(plan.advertisedUUIDs == [Self.heartRate, Self.battery])
        #expect(plan.overflowUUIDs.isEmpty)
        #expect(plan.localName == "HR Belt")
        #expect(!plan.isLocalNameShortened)
        #expect(
            plan.budget
                == AdvertisingBudget(
                    advertisingUsed: 9, serviceUUIDsUsed: 6, serviceUUIDsLimit: 28, scanResponseUsed: 9,
                    scanResponseLimit: 10))
        #expect(
            plan.advertisingStructures.first?.explanation
                == "Complete list of 16-bit service UUIDs: 180D (Heart Rate), 180F (Battery)")
        #expect(plan.registration.serviceUUIDs == [Self.heartRate, Self.battery])
        #expect(plan.registration.localName == "HR Belt")
        #expect(plan.registration.isDiscoverable)
    }

    @Test func oneCustomServiceLeavesTenBytesAndALongNameIsShortenedToEightBytes() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(localName: "Thermometer Pro", serviceUUIDs: [Self.custom]))

        // 0x11 = 17 = type + 16 UUID bytes; complete 128-bit list 0x07.
        #expect(plan.rule.advertisingData == [0x02, 0x01, 0x06, 0x11, 0x07] + Self.customLE)
        #expect(plan.advertisingData == [0x11, 0x07] + Self.customLE + [0x02, 0x01, 0x06])
        // 28 - 18 leaves 10, by Core Bluetooth's rule (docs/profile-format.md).
        #expect(plan.budget.serviceUUIDsUsed == 18)
        // The rule: length 9, Shortened Local Name 0x08, "Thermome" (8 bytes: 10-byte scan response budget).
        #expect(plan.rule.scanResponse == [0x09, 0x08, 0x54, 0x68, 0x65, 0x72, 0x6D, 0x6F, 0x6D, 0x65])
        // BlueZ gets the pre-cut name and marks it Complete (0x09): it cannot know it was cut.
        #expect(plan.scanResponse == [0x09, 0x09, 0x54, 0x68, 0x65, 0x72, 0x6D, 0x6F, 0x6D, 0x65])
        #expect(plan.registration.localName == "Thermome")
        #expect(plan.localName == "Thermome")
        #expect(plan.isLocalNameShortened)
        #expect(plan.deviations.contains { $0.contains("registered pre-cut") })
    }

    @Test func aSecondCustomServiceOverflowsAndMakesTheListIncomplete() throws {
        let plan = try AdvertisingPlanner.plan(Advertisement(serviceUUIDs: [Self.custom, Self.nordicUART]))

        // 28 - 18 = 10 left; the second UUID needs 16: it overflows and the rule's list becomes 0x06 Incomplete.
        #expect(plan.rule.advertisingData == [0x02, 0x01, 0x06, 0x11, 0x06] + Self.customLE)
        // bluetoothd only writes complete list types (serialize_service_uuids): 0x07 on the air.
        #expect(plan.advertisingData == [0x11, 0x07] + Self.customLE + [0x02, 0x01, 0x06])
        #expect(plan.advertisedUUIDs == [Self.custom])
        #expect(plan.overflowUUIDs == [Self.nordicUART])
        #expect(plan.registration.serviceUUIDs == [Self.custom])
        #expect(plan.scanResponse.isEmpty)
        #expect(plan.deviations.contains { $0.contains("128-bit UUID list is incomplete") })
    }

    @Test func smallerUUIDsStillFitAfterALargerOneOverflows() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(serviceUUIDs: [Self.custom, Self.nordicUART, Self.heartRate]))
        // 18 for the first custom UUID, the second overflows, 180D opens a 16-bit list for 4: 22 of 28.
        #expect(plan.advertisedUUIDs == [Self.custom, Self.heartRate])
        #expect(plan.overflowUUIDs == [Self.nordicUART])
        // bt_ad_generate writes 16-bit lists before 128-bit ones, whatever the priority order.
        #expect(plan.advertisingData == [0x03, 0x03, 0x0D, 0x18, 0x11, 0x07] + Self.customLE + [0x02, 0x01, 0x06])
        #expect(plan.budget.serviceUUIDsUsed == 22)
    }

    @Test func manufacturerDataCanFillTheWholeBudgetAndPushesServicesIntoOverflow() throws {
        let payload = (0..<24).map { UInt8($0) }
        let plan = try AdvertisingPlanner.plan(
            Advertisement(
                serviceUUIDs: [Self.heartRate],
                manufacturerData: [ManufacturerData(companyID: 0xFFFF, data: payload)]))

        // 0x1B = 27 = type + 2 company bytes + 24 data bytes; company 0xFFFF little-endian.
        #expect(plan.rule.advertisingData == [0x02, 0x01, 0x06, 0x1B, 0xFF, 0xFF, 0xFF] + payload)
        #expect(plan.advertisingData == [0x1B, 0xFF, 0xFF, 0xFF] + payload + [0x02, 0x01, 0x06])
        #expect(plan.budget.advertisingUsed == 31)
        #expect(plan.budget.serviceUUIDsLimit == 0)
        #expect(plan.overflowUUIDs == [Self.heartRate])
        #expect(plan.registration.serviceUUIDs.isEmpty)
    }

    @Test func manufacturerDataOneByteTooLongIsRefused() {
        let advertisement = Advertisement(
            manufacturerData: [ManufacturerData(companyID: 0xFFFF, data: Array(repeating: 0, count: 25))])
        // 3 (Flags) + 2 + 2 + 25 = 32 > 31: bluetoothd 5.66 would fail, 5.69+ would go extended.
        let refusal = AdvertisingPlanError.advertisingDataTooLong(
            needed: 32, limit: 31, largestField: "Manufacturer specific data: company 0xFFFF, 25 bytes (29 bytes)")
        #expect(throws: refusal) { try AdvertisingPlanner.plan(advertisement) }
        #expect(refusal.description.hasPrefix("advertising data needs 32 bytes, 1 more than the 31"))
    }

    @Test func txPowerAndAppearanceCostTheirBytesAndShrinkTheUUIDBudget() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(serviceUUIDs: [Self.custom, Self.heartRate], appearance: 0x0341, includesTxPower: true),
            adapter: AdapterConditions(advertisingTxPower: -4))

        // 31 - 3 (Flags) - 4 (appearance) - 3 (TX power) = 21: the custom UUID takes 18, 180D would need 4.
        #expect(plan.budget.serviceUUIDsLimit == 21)
        #expect(plan.overflowUUIDs == [Self.heartRate])
        #expect(
            plan.rule.advertisingData
                == [0x02, 0x01, 0x06]  // Flags
                + [0x11, 0x07] + Self.customLE  // complete 128-bit list: no 128-bit UUID overflowed
                + [0x03, 0x19, 0x41, 0x03]  // length 3, Appearance, 0x0341 little-endian (heart-rate belt)
                + [0x02, 0x0A, 0xFC])  // length 2, TX Power Level, -4 dBm
        // On the air: bluetoothd's UUIDs, appearance, Flags; then the kernel appends TX power.
        #expect(
            plan.advertisingData
                == [0x11, 0x07] + Self.customLE + [0x03, 0x19, 0x41, 0x03, 0x02, 0x01, 0x06, 0x02, 0x0A, 0xFC])
        #expect(plan.budget.advertisingUsed == 28)
        #expect(plan.advertisingStructures.last?.origin == .kernel)
        #expect(plan.registration.appearance == 0x0341)
        #expect(plan.registration.includesTxPower)
    }

    @Test func aMultiByteCharacterIsNeverCutInHalf() throws {
        // "Café ☕ Bar": C a f é(C3 A9) space ☕(E2 98 95)...: byte 8 falls inside the cup, so the cut is at 6.
        let plan = try AdvertisingPlanner.plan(Advertisement(localName: "Café ☕ Bar"))
        #expect(plan.localName == "Café ")
        #expect(plan.rule.scanResponse == [0x07, 0x08, 0x43, 0x61, 0x66, 0xC3, 0xA9, 0x20])
        #expect(plan.scanResponse == [0x07, 0x09, 0x43, 0x61, 0x66, 0xC3, 0xA9, 0x20])
        #expect(plan.budget.scanResponseUsed == 8)
    }

    @Test func fullScanResponseKeepsANameOfFifteenBytesWhole() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(localName: "Thermometer Pro", scanResponse: .full))
        // 0x10 = 16 = type + 15 name bytes, Complete Local Name.
        #expect(plan.scanResponse == [0x10, 0x09] + Array("Thermometer Pro".utf8))
        #expect(plan.rule.scanResponse == plan.scanResponse)
        #expect(plan.budget.scanResponseLimit == 31)
        #expect(plan.deviations.allSatisfy { !$0.contains("name") })
    }

    @Test func fullScanResponseLetsBluetoothdShortenAnASCIINameItself() throws {
        let name = "Blemu Heart Rate Monitor Deluxe Edition"
        let plan = try AdvertisingPlanner.plan(Advertisement(localName: name, scanResponse: .full))
        // 29 bytes fit after the 2 header bytes; 0x1E = 30 = type + 29; 0x08 Shortened on both layouts,
        // because bluetoothd's own byte cut at 29 lands on a character boundary (serialize_name).
        #expect(plan.scanResponse == [0x1E, 0x08] + Array("Blemu Heart Rate Monitor Delu".utf8))
        #expect(plan.rule.scanResponse == plan.scanResponse)
        #expect(plan.registration.localName == name)
        #expect(plan.budget.scanResponseUsed == 31)
    }

    @Test func aNonDiscoverableAdvertisementGetsKernelFlagsOnAnLEOnlyAdapter() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(serviceUUIDs: [Self.heartRate], isDiscoverable: false),
            adapter: AdapterConditions(isBREDREnabled: false))
        #expect(plan.rule.advertisingData == [0x03, 0x03, 0x0D, 0x18])
        // eir_create_adv_data prepends BR/EDR Not Supported (0x04) alone when BR/EDR is disabled.
        #expect(plan.advertisingData == [0x02, 0x01, 0x04, 0x03, 0x03, 0x0D, 0x18])
        #expect(plan.advertisingStructures.first?.origin == .kernel)
    }

    @Test func aDiscoverableDualModeAdapterMakesBluetoothdSendGeneralDiscoverableOnly() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(serviceUUIDs: [Self.heartRate]),
            adapter: AdapterConditions(isBREDREnabled: true, isAdapterDiscoverable: true))
        #expect(plan.advertisingData == [0x03, 0x03, 0x0D, 0x18, 0x02, 0x01, 0x02])
        #expect(plan.deviations.contains { $0.contains("not 0x06") })
    }

    @Test func serviceDataCostsHeaderUUIDAndBytes() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(serviceData: [ServiceData(uuid: Self.battery, data: [0x64])]))
        // length 4 = type + 2 UUID bytes + 1 data byte; 0x16 Service Data 16-bit; 180F; 100 %.
        #expect(plan.advertisingData == [0x04, 0x16, 0x0F, 0x18, 0x64, 0x02, 0x01, 0x06])
        #expect(plan.budget.serviceUUIDsLimit == 23)  // min(28, 31 - 3 Flags - 5 service data)
    }

    @Test func duplicatesAreRefusedBecauseBluetoothdWouldMangleThem() {
        #expect(throws: AdvertisingPlanError.duplicateServiceUUID(Self.heartRate)) {
            try AdvertisingPlanner.plan(Advertisement(serviceUUIDs: [Self.heartRate, BluetoothUUID(uint32: 0x180D)]))
        }
        #expect(throws: AdvertisingPlanError.duplicateManufacturerData(companyID: 0x004C)) {
            try AdvertisingPlanner.plan(
                Advertisement(manufacturerData: [
                    ManufacturerData(companyID: 0x004C, data: [1]), ManufacturerData(companyID: 0x004C, data: [2]),
                ]))
        }
    }

    @Test func onAirBytesParseBackIntoTheSameStructures() throws {
        let plan = try AdvertisingPlanner.plan(
            Advertisement(localName: "HR Belt", serviceUUIDs: [Self.heartRate], appearance: 0x0341))
        let parsed = try #require(ADStructure.parse(plan.advertisingData))
        #expect(parsed.map(\.type) == plan.advertisingStructures.map(\.type))
        #expect(parsed.map(\.payload) == plan.advertisingStructures.map(\.payload))
        #expect(ADStructure.hex([0x02, 0x01, 0x06]) == "02 01 06")
        #expect(ADStructure.parse([0x05, 0x03, 0x0D]) == nil)
        #expect(plan.report.contains("ADV (11/31 bytes): 03 03 0D 18 03 19 41 03 02 01 06"))
    }
}
