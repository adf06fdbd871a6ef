import DBus
import GATTModel
import Testing

@testable import BlueZ

/// Descriptors' reads and writes as a value, with no bus: the ATT errors a central gets and what it reads back.
@Suite struct DescriptorValuesTests {
    static let path = ObjectPath("/org/bluez/example/service0/char0/desc0")
    static let writable = Descriptor(
        uuid: BluetoothUUID(0x2901), value: Array("abcd".utf8), permissions: [.readable, .writeable])

    @Test func readsStartAtTheOffsetAndStopAtTheEnd() {
        let values = DescriptorValues()
        #expect(values.read(Self.writable, at: Self.path, offset: 0) == .success(Array("abcd".utf8)))
        #expect(values.read(Self.writable, at: Self.path, offset: 4) == .success([]))
        #expect(values.read(Self.writable, at: Self.path, offset: 5) == .failure(.invalidOffset))
        let writeOnly = Descriptor(uuid: BluetoothUUID(0x2901), value: [1], permissions: .writeable)
        #expect(values.read(writeOnly, at: Self.path, offset: 0) == .failure(.readNotPermitted))
    }

    @Test func aWriteReplacesFromItsOffsetAndKeepsTheRestUntilReset() {
        var values = DescriptorValues()
        #expect(
            values.write(Array("XY".utf8), to: Self.writable, at: Self.path, offset: 1, authorizingOnly: false) == nil)
        #expect(values.read(Self.writable, at: Self.path, offset: 0) == .success(Array("aXYd".utf8)))
        // Past the end grows the value; a prepare-authorize only checks.
        #expect(
            values.write(Array("ef".utf8), to: Self.writable, at: Self.path, offset: 4, authorizingOnly: false) == nil)
        #expect(values.write([0], to: Self.writable, at: Self.path, offset: 0, authorizingOnly: true) == nil)
        #expect(values.read(Self.writable, at: Self.path, offset: 0) == .success(Array("aXYdef".utf8)))
        values.reset()
        #expect(values.read(Self.writable, at: Self.path, offset: 0) == .success(Array("abcd".utf8)))
    }

    @Test func aRefusedWriteChangesNothing() {
        var values = DescriptorValues()
        let readOnly = Descriptor.userDescription("name")
        #expect(values.write([1], to: readOnly, at: Self.path, offset: 0, authorizingOnly: false) == .writeNotPermitted)
        #expect(
            values.write([1], to: Self.writable, at: Self.path, offset: 5, authorizingOnly: false) == .invalidOffset)
        let long = [UInt8](repeating: 7, count: Characteristic.maximumValueLength)
        #expect(
            values.write(long, to: Self.writable, at: Self.path, offset: 1, authorizingOnly: false)
                == .invalidAttributeValueLength)
        #expect(values.read(Self.writable, at: Self.path, offset: 0) == .success(Array("abcd".utf8)))
    }
}
