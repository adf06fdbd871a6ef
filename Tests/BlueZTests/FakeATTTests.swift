// The fake's own error mapping, checked against 5.66 `dbus_error_to_att_ecode`, and where an older note of ours
// differs from it.
import BlueZModel
import BlueZTesting
import GATTModel
import Testing

@Suite struct FakeATTTests {
    @Test(arguments: [
        ("org.bluez.Error.NotSupported", "", ATTError.requestNotSupported),
        ("org.bluez.Error.NotAuthorized", "", .insufficientAuthorization),
        ("org.bluez.Error.InvalidValueLength", "", .invalidAttributeValueLength),
        ("org.bluez.Error.InvalidOffset", "", .invalidOffset),
        ("org.bluez.Error.InProgress", "", .procedureAlreadyInProgress),
        ("org.bluez.Error.Failed", "0x80", ATTError(rawValue: 0x80)),
        ("org.bluez.Error.Failed", "0x9f", ATTError(rawValue: 0x9F)),
        ("org.bluez.Error.Failed", "0x9F", ATTError(rawValue: 0x9F)),
        ("org.bluez.Error.Failed", "128", ATTError(rawValue: 0x80)),
        ("org.bluez.Error.Failed", "0200", ATTError(rawValue: 0x80)),
        ("org.bluez.Error.Failed", "battery low", ATTError(rawValue: 0x80)),
        ("org.bluez.Error.Failed", "0x80 battery", ATTError(rawValue: 0x80)),
        ("org.bluez.Error.Failed", "0x7f", .unlikelyError),
        ("org.bluez.Error.Failed", "0xa0", .unlikelyError),
        ("org.bluez.Error.Failed", "-1", .unlikelyError),
        ("org.freedesktop.DBus.Error.UnknownMethod", "", .unlikelyError),
        ("org.freedesktop.DBus.Error.NoReply", "", .unlikelyError),
    ])
    func dbusErrorsMapAs566Does(name: String, message: String, expected: ATTError) {
        #expect(FakeATT.code(forErrorNamed: name, message: message, on: .write) == expected)
    }

    @Test func notPermittedIsReadOrWriteNotPermittedByOperation() {
        #expect(
            FakeATT.code(forErrorNamed: "org.bluez.Error.NotPermitted", message: "", on: .read) == .readNotPermitted)
        #expect(
            FakeATT.code(forErrorNamed: "org.bluez.Error.NotPermitted", message: "", on: .write) == .writeNotPermitted)
    }

    /// An older note of ours listed ImproperlyConfigured -> 0xFD and "Failed, other message -> 0x80"; 5.66 has no
    /// ImproperlyConfigured case, and strtol parses an empty message as 0, which is out of range.
    @Test func whereBlueZFactsDiffersFrom566The566AnswerWins() {
        #expect(
            FakeATT.code(forErrorNamed: "org.bluez.Error.ImproperlyConfigured", message: "", on: .write)
                == .unlikelyError)
        #expect(FakeATT.code(forErrorNamed: "org.bluez.Error.Failed", message: "", on: .read) == .unlikelyError)
    }

    @Test func everyFlagOfBlueZFlagIsAcceptedAndOthersAreNot() {
        for flag in BlueZFlag.allCases { #expect(FakeATT.parseCharacteristicFlags([flag.rawValue]) != nil) }
        #expect(FakeATT.parseCharacteristicFlags(["read", "Read"]) == nil)
        #expect(FakeATT.parseDescriptorFlags(["notify"]) == nil)
        #expect(FakeATT.parseDescriptorFlags(["encrypt-read", "authorize"]) != nil)
    }

    @Test func securityFlagsImplyTheirBaseProperty() {
        #expect(FakeATT.parseCharacteristicFlags(["encrypt-read"])?.properties == [.read])
        #expect(FakeATT.parseCharacteristicFlags(["secure-notify"])?.properties == [.notify])
        #expect(FakeATT.parseCharacteristicFlags(["writable-auxiliaries"])?.properties == [.extendedProperties])
    }

    @Test func staticPermissionsAreCheckedBeforeTheApp() {
        let secure = FakeATT.parseCharacteristicFlags(["secure-read"])!.permissions
        #expect(FakeATT.check(secure, for: .read, at: .authenticated) == .insufficientAuthentication)
        #expect(FakeATT.check(secure, for: .read, at: .secure) == nil)
        let notifyOnly = FakeATT.parseCharacteristicFlags(["notify"])!.permissions
        #expect(FakeATT.check(notifyOnly, for: .read, at: .low) == nil)  // 5.66: no permission bits, no check
    }
}
