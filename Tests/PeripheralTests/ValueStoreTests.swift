import GATTModel
import Testing

@testable import Peripheral

/// The store a write lands in: each write applies over what the last one left, and a refused or dry-run write
/// leaves the value as it was.
@Suite struct ValueStoreTests {
    @Test func eachWriteAppliesOverTheLastOne() {
        let store = ValueStore()
        let log = Fixture.log
        #expect(store.apply([WriteRequest(characteristic: log, offset: 0, value: [9, 9])]) == nil)
        #expect(store.value(of: log) == [9, 9])
        // Written before: the next write applies at an offset into the stored value, not the declared 100 bytes.
        #expect(store.apply([WriteRequest(characteristic: log, offset: 1, value: [7])]) == nil)
        #expect(store.value(of: log) == [9, 7])
        #expect(store.apply([WriteRequest(characteristic: log, offset: 3, value: [1])]) == .invalidOffset)
        #expect(store.snapshot.keys.sorted() == ["log"])
    }

    @Test func writesToTwoCharacteristicsInTurnEachLandInTheirOwn() {
        let store = ValueStore()
        for round in UInt8(1)...3 {
            #expect(store.apply([WriteRequest(characteristic: Fixture.setting, offset: 0, value: [round])]) == nil)
            #expect(store.apply([WriteRequest(characteristic: Fixture.log, offset: 0, value: [round, round])]) == nil)
            #expect(store.value(of: Fixture.setting) == [round])
            #expect(store.value(of: Fixture.log) == [round, round])
        }
        #expect(store.snapshot == ["setting": [3], "log": [3, 3]])
    }

    @Test func aDryRunOrARefusedWriteKeepsTheValue() {
        let store = ValueStore()
        let setting = Fixture.setting
        // Never written: a dry run stores nothing, not even the declared value.
        #expect(store.apply([WriteRequest(characteristic: setting, offset: 0, value: [1])], dryRun: true) == nil)
        #expect(store.snapshot.isEmpty)
        #expect(store.apply([WriteRequest(characteristic: setting, offset: 0, value: [2])]) == nil)
        // Written before: a dry run and a write past the end both leave [2].
        #expect(store.apply([WriteRequest(characteristic: setting, offset: 0, value: [3])], dryRun: true) == nil)
        #expect(store.apply([WriteRequest(characteristic: setting, offset: 2, value: [4])]) == .invalidOffset)
        #expect(
            store.apply([WriteRequest(characteristic: setting, offset: 0, value: Array(repeating: 5, count: 9))])
                == .invalidAttributeValueLength)
        #expect(store.value(of: setting) == [2])
        #expect(store.apply([WriteRequest(characteristic: Fixture.name, offset: 0, value: [1])]) == .writeNotPermitted)
        #expect(store.snapshot == ["setting": [2]])
    }
}
