import BlueZModel
import Testing

@testable import GATTModel

@Suite struct FlagsAndErrorsTests {
    @Test func coreBluetoothEncryptionMapsToBlueZEncryptFlags() {
        let characteristic = Characteristic(
            id: "email", uuid: BluetoothUUID(0x2A87), properties: [.read, .write, .notifyEncryptionRequired, .notify],
            permissions: [.readEncryptionRequired, .writeEncryptionRequired])
        #expect(
            characteristic.bluezFlags.map(\.rawValue)
                == ["read", "write", "notify", "encrypt-read", "encrypt-write", "encrypt-notify"])
    }

    @Test func strongestRequirementWinsAndEachLevelHasItsFlag() {
        var security = SecurityRequirements([.read: .secure, .write: .authenticated, .indicate: .encrypted])
        security.require(.encrypted, for: .read)
        let characteristic = Characteristic(
            id: "x", uuid: BluetoothUUID(0xFFF1), properties: [.read, .write, .indicate],
            permissions: [.readEncryptionRequired, .writeable], security: security)
        #expect(
            characteristic.bluezFlags.map(\.rawValue)
                == ["read", "write", "indicate", "secure-read", "encrypt-authenticated-write", "encrypt-indicate"])
    }

    @Test func everyPropertyFlagIsAStringBlueZAccepts() {
        let all = CharacteristicProperties(rawValue: 0xFFF)
        let flags = Characteristic(id: "all", uuid: BluetoothUUID(0xFFF1), properties: all).bluezFlags
        // Ten property flags; the two encryption-required properties become security flags instead.
        #expect(
            flags.map(\.rawValue) == [
                "broadcast", "read", "write-without-response", "write", "notify", "indicate",
                "authenticated-signed-writes", "extended-properties", "reliable-write", "writable-auxiliaries",
                "encrypt-notify", "encrypt-indicate",
            ])
    }

    @Test func descriptorFlagsStayWithinWhatBlueZAcceptsOnDescriptors() {
        let descriptor = Descriptor(
            uuid: BluetoothUUID(0x2901), value: [], permissions: [.readable, .writeEncryptionRequired],
            security: SecurityRequirements([.read: .authenticated]))
        #expect(
            descriptor.bluezFlags.map(\.rawValue) == ["read", "write", "encrypt-authenticated-read", "encrypt-write"])
        #expect(Set(descriptor.bluezFlags).isSubset(of: BlueZFlag.descriptorFlags))
    }

    @Test func defaultPermissionsFollowTheProperties() {
        #expect(Characteristic.defaultPermissions(for: [.read, .notify]) == [.readable])
        #expect(Characteristic.defaultPermissions(for: [.writeWithoutResponse]) == [.writeable])
    }

    @Test func attErrorsPrintTheirCodeAndName() {
        #expect(ATTError.unlikelyError.description == "0x0E Unlikely Error")
        #expect(ATTError(rawValue: 0x85).description == "0x85 Application Error")
        #expect(ATTError(rawValue: 0x50).name == "Reserved")
        #expect(ATTError.application(0xA0) == nil)
        #expect(ATTError(name: "value-not-allowed") == .valueNotAllowed)
        #expect(ATTError(name: "0x81") == ATTError(rawValue: 0x81))
        #expect(ATTError(name: "nonsense") == nil)
    }

    @Test func propertyNamesRoundTrip() {
        for (property, name) in CharacteristicProperties.names {
            #expect(CharacteristicProperties(name: name) == property)
        }
        #expect(CharacteristicProperties(name: "notifiy") == nil)
    }
}
