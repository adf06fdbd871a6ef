import Testing

@testable import GATTModel

@Suite struct BluetoothUUIDTests {
    @Test(arguments: [
        "180D", "180d", "0x180D", "0X180d", "0000180D", "0000180d-0000-1000-8000-00805f9b34fb",
        "0000180D00001000800000805F9B34FB",
    ])
    func everyCommonSpellingOfHeartRateIsTheSameUUID(spelling: String) throws {
        let uuid = try #require(BluetoothUUID(spelling))
        #expect(uuid == BluetoothUUID(0x180D))
        #expect(uuid.width == .bits16)
        #expect(uuid.description == "180D")
        #expect(uuid.littleEndianBytes == [0x0D, 0x18])
    }

    @Test(arguments: [
        "", "18D", "180DX", "0x", "0000180d-0000-1000-8000_00805f9b34fb", "0000180d0-000-1000-8000-00805f9b34fb",
        "g000180d-0000-1000-8000-00805f9b34fb", "12345",
    ])
    func malformedSpellingsAreRejected(spelling: String) {
        #expect(BluetoothUUID(spelling) == nil)
    }

    @Test func customUUIDKeepsAll128BitsAndPrintsUppercase() throws {
        let uuid = try #require(BluetoothUUID("e71ee188-279f-4ed6-8055-12d77bfd900c"))
        #expect(uuid.width == .bits128)
        #expect(uuid.description == "E71EE188-279F-4ED6-8055-12D77BFD900C")
        #expect(uuid.fullString == "e71ee188-279f-4ed6-8055-12d77bfd900c")
        #expect(uuid.littleEndianBytes.first == 0x0C)
        #expect(uuid.littleEndianBytes.last == 0xE7)
        #expect(uuid.uint16 == nil)
    }

    @Test func thirtyTwoBitShorthandIsBasedButNotSixteenBit() throws {
        let uuid = try #require(BluetoothUUID("0001180D"))
        #expect(uuid.width == .bits32)
        #expect(uuid.description == "0001180D")
        #expect(uuid.littleEndianBytes == [0x0D, 0x18, 0x01, 0x00])
        #expect(uuid.fullString == "0001180d-0000-1000-8000-00805f9b34fb")
    }

    @Test func sixteenBitUUIDPrintsItsFullBlueZForm() {
        #expect(BluetoothUUID(0x2A37).fullString == "00002a37-0000-1000-8000-00805f9b34fb")
    }

    @Test func assignedNamesResolveBothWays() throws {
        let entry = try #require(AssignedNumber.named("heart-rate-measurement", kind: .characteristic))
        #expect(entry.uuid == BluetoothUUID(0x2A37))
        #expect(entry.kind == .characteristic)
        #expect(BluetoothUUID(0x180D).assignedName == "Heart Rate")
        #expect(BluetoothUUID(0xFFF0).assignedName == nil)
    }

    @Test func assignedNumberKeysAreUniquePerKindAndNumbersAreUnique() {
        for kind in [AssignedNumber.Kind.service, .characteristic, .descriptor] {
            let keys = AssignedNumber.keys(of: kind)
            #expect(Set(keys).count == keys.count)
        }
        let numbers = AssignedNumber.table.map(\.number)
        #expect(Set(numbers).count == numbers.count)
    }

    @Test func aNameSharedByAServiceAndACharacteristicResolvesByKind() {
        #expect(AssignedNumber.named("current-time", kind: .service)?.number == 0x1805)
        #expect(AssignedNumber.named("current-time", kind: .characteristic)?.number == 0x2A2B)
        #expect(AssignedNumber.named("heart-rate", kind: .characteristic) == nil)
    }
}
