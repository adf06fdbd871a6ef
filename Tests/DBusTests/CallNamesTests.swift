import Testing

@testable import DBus

struct CallNamesTests {
    private func call(_ path: ObjectPath, _ interface: String?, _ member: String) throws -> Message {
        try Message.methodCall(destination: nil, path: path, interface: interface, member: member)
    }

    private func names(_ context: CallContext) -> [String?] {
        [context.sender, context.path.rawValue, context.interface, context.member]
    }

    @Test func eachCallGetsItsOwnNamesWhetherOrNotTheLastOnesAreReused() throws {
        var callNames = CallNames()
        let first = try call("/org/bluez/example/service0/char0", "org.bluez.GattCharacteristic1", "ReadValue")
        let other = try call("/org/bluez/example/service0/char0/desc0", "org.bluez.GattDescriptor1", "WriteValue")
        let unnamed = try call("/org/bluez/example/service0/char0", nil, "ReadValue")
        // A name that is a prefix of the last one must not be taken for it.
        let prefix = try call("/org/bluez/example/service0/char", "org.bluez.GattCharacteristic1", "Read")
        let expected: [[String?]] = [
            [nil, "/org/bluez/example/service0/char0", "org.bluez.GattCharacteristic1", "ReadValue"],
            [nil, "/org/bluez/example/service0/char0", "org.bluez.GattCharacteristic1", "ReadValue"],
            [nil, "/org/bluez/example/service0/char0/desc0", "org.bluez.GattDescriptor1", "WriteValue"],
            [nil, "/org/bluez/example/service0/char0", nil, "ReadValue"],
            [nil, "/org/bluez/example/service0/char", "org.bluez.GattCharacteristic1", "Read"],
            [nil, "/org/bluez/example/service0/char0", "org.bluez.GattCharacteristic1", "ReadValue"],
        ]
        let seen = [first, first, other, unnamed, prefix, first].map { names(callNames.context(of: $0)) }
        #expect(seen == expected)
    }
}
