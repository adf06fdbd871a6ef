import BlueZTesting
import Synchronization
import Testing

@testable import DBus

/// A message holding `values`, as a receiver would read it (no bus involved).
private func message(_ values: [DBusValue]) throws -> Message {
    let message = try Message.methodCall(
        destination: "org.example.Peer", path: "/x", interface: "org.example.I", member: "M")
    try message.append(values)
    return message
}

/// An ordered `a{sv}` (a Swift dictionary would not keep the order the test checks).
private func options(_ entries: [(String, DBusValue)]) -> DBusValue {
    .dictionary(key: "s", value: "v", entries.map { .init(.string($0.0), .variant($0.1)) })
}

/// What a reader saw of one entry: its key and each typed view of its value.
private struct Seen: Equatable {
    var key: String
    var type: TypeCode
    var uint16: UInt16?
    var boolean: Bool?
    var string: String?
    var objectPath: ObjectPath?
}

/// Where a native string's bytes are: equal for two strings that share their storage.
private func storage(of string: String) -> UnsafeRawPointer? {
    string.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
}

private func readVardict(_ reader: inout ArgumentReader) -> (found: Bool, entries: [Seen]) {
    var seen: [Seen] = []
    let found = reader.vardict { entry in
        seen.append(
            Seen(
                key: entry.key, type: entry.type, uint16: entry.uint16(), boolean: entry.boolean(),
                string: entry.string(), objectPath: entry.objectPath()))
    }
    return (found, seen)
}

struct ArgumentReaderTests {
    @Test func readsAWriteValuesBytesAndEachOptionByItsType() throws {
        let sent = try message([
            .bytes([1, 2, 3]),
            options([
                ("device", .objectPath("/org/bluez/hci0/dev_00_11")), ("mtu", .uint16(185)), ("link", .string("LE")),
                ("prepare-authorize", .boolean(true)),
            ]),
        ])
        var reader = ArgumentReader(sent)
        #expect(reader.nextType == .array)
        #expect(reader.bytes() == [1, 2, 3])
        let (found, entries) = readVardict(&reader)
        #expect(found)
        #expect(
            entries == [
                Seen(key: "device", type: .objectPath, objectPath: "/org/bluez/hci0/dev_00_11"),
                Seen(key: "mtu", type: .uint16, uint16: 185),
                Seen(key: "link", type: .string, string: "LE"),
                Seen(key: "prepare-authorize", type: .boolean, boolean: true),
            ])
        #expect(reader.nextType == nil)
        #expect(reader.bytes() == nil)
    }

    @Test func aValueOfAnotherTypeIsNilAndTheKeyIsComparedExactly() throws {
        var reader = ArgumentReader(try message([options([("mtu", .uint32(185))])]))
        var matches: [Bool] = []
        var mtu: UInt16?? = .none
        _ = reader.vardict { entry in
            matches = [entry.hasKey("mtu"), entry.hasKey("mt"), entry.hasKey("mtu2"), entry.hasKey("")]
            mtu = .some(entry.uint16())
        }
        #expect(matches == [true, false, false, false])
        #expect(mtu == .some(nil))
    }

    @Test func aPathEqualToTheLastIsTheLastStringItself() throws {
        let last = "/org/bluez/hci0/dev_00_11_22_33_44_55"
        func path(_ value: DBusValue, reusing last: String?) throws -> String? {
            var reader = ArgumentReader(try message([options([("device", value)])]))
            var path: String?
            _ = reader.vardict { entry in path = entry.objectPath(reusing: last)?.rawValue }
            return path
        }
        // The same path: `last`'s own storage, not a copy of it.
        let same = try #require(try path(.objectPath(ObjectPath(unchecked: last)), reusing: last))
        #expect(same == last)
        #expect(storage(of: same) == storage(of: last))
        // Another path, one that `last` starts with, or no last at all: a new string of what the message says.
        let other = try #require(try path(.objectPath("/org/bluez/hci0/dev_66"), reusing: last))
        #expect(other == "/org/bluez/hci0/dev_66")
        #expect(
            try path(.objectPath("/org/bluez/hci0/dev_00_11_22_33_44"), reusing: last)
                == "/org/bluez/hci0/dev_00_11_22_33_44")
        #expect(try path(.objectPath(ObjectPath(unchecked: last)), reusing: nil) == last)
        // Not an object path: nil, whatever the last one was.
        #expect(try path(.string(last), reusing: last) == nil)
    }

    @Test func theWrongShapeIsRefusedWithoutMoving() throws {
        var reader = ArgumentReader(try message([.string("not bytes"), .bytes([9])]))
        #expect(reader.bytes() == nil)
        #expect(readVardict(&reader).found == false)
        #expect(reader.nextType == .string)
        reader.skip()
        // An `ay` is an array, but not of dictionary entries.
        #expect(readVardict(&reader).found == false)
        #expect(reader.bytes() == [9])
        #expect(reader.nextType == nil)
        reader.skip()
        #expect(reader.nextType == nil)
    }

    @Test func whatFollowsAReadArgumentIsReadOrSkipped() throws {
        let values: [DBusValue] = [.bytes([1]), options([("mtu", .uint16(23))]), .string("third"), .bytes([4])]
        var reader = ArgumentReader(try message(values))
        #expect(reader.bytes() == [1])
        // `skip` right after a read steps over the read argument, then over the next one.
        reader.skip()
        #expect(reader.nextType == .string)
        var again = ArgumentReader(try message(values))
        reader.skip()
        #expect(reader.bytes() == [4])
        // A dictionary followed by more arguments.
        #expect(again.bytes() == [1])
        #expect(readVardict(&again).entries == [Seen(key: "mtu", type: .uint16, uint16: 23)])
        #expect(again.nextType == .string)
        again.skip()
        #expect(again.bytes() == [4])
        #expect(again.nextType == nil)
    }

    @Test func emptyContainersAndNoArgumentsReadAsEmpty() throws {
        var reader = ArgumentReader(try message([.bytes([]), options([])]))
        #expect(reader.bytes() == [])
        let (found, entries) = readVardict(&reader)
        #expect(found && entries.isEmpty)
        var none = ArgumentReader(try message([]))
        #expect(none.nextType == nil)
        #expect(none.bytes() == nil)
    }

    @Test(.enabled(if: PrivateBus.isAvailable, "needs the dbus-daemon binary"))
    func aMethodDeclaredInPlaceGetsNoDecodedArgumentsAndReadsThem() async throws {
        let pair = try BusPair()
        defer { pair.close() }
        let decoded = Mutex<[DBusValue]?>(nil)
        try pair.server.export(
            "/reader",
            [
                Interface(
                    "org.example.Reader",
                    methods: [
                        Method("Write", inputs: "aya{sv}", outputs: "qs", decoding: .inPlace) { call in
                            decoded.withLock { $0 = call.arguments }
                            let (count, device) = call.readArguments { reader in
                                let count = reader.bytes()?.count ?? -1
                                var device = ""
                                _ = reader.vardict { entry in
                                    if entry.hasKey("device") { device = entry.objectPath()?.rawValue ?? "?" }
                                }
                                return (count, device)
                            }
                            call.reply([.uint16(UInt16(count)), .string(device)])
                        }
                    ])
            ])
        let reply = try await pair.client.call(
            pair.server.uniqueName, path: "/reader", interface: "org.example.Reader", member: "Write",
            arguments: [.bytes([7, 7]), options([("mtu", .uint16(23)), ("device", .objectPath("/dev_1"))])])
        #expect(reply == [.uint16(2), .string("/dev_1")])
        #expect(decoded.withLock { $0 } == [])
        // The declared signature is still enforced before the handler runs.
        await #expect(throws: DBusError.self) {
            try await pair.client.call(
                pair.server.uniqueName, path: "/reader", interface: "org.example.Reader", member: "Write",
                arguments: [.string("x")])
        }
    }
}
