import Glibc
import Testing

@testable import DBus

/// Appends `values` to a fresh message (no bus involved) and reads them back.
private func roundTrip(_ values: [DBusValue]) throws -> [DBusValue] {
    let message = try Message.methodCall(destination: "org.example.Peer", path: "/x", interface: "org.example.I", member: "M")
    try message.append(values)
    return message.arguments()
}

@Test func everyBasicTypeSurvivesARoundTrip() throws {
    let values: [DBusValue] = [
        .byte(0xFE), .boolean(true), .boolean(false), .int16(-2), .uint16(0xFFFF), .int32(-70000),
        .uint32(4_000_000_000), .int64(-1 << 40), .uint64(1 << 63), .double(3.25), .string("héllo"),
        .objectPath("/org/bluez/hci0"), .signature("a{sv}"),
    ]
    #expect(try roundTrip(values) == values)
}

@Test func byteArraysComeBackAsBytesIncludingEmptyAnd512() throws {
    let big = (0..<512).map { UInt8(truncatingIfNeeded: $0) }
    #expect(try roundTrip([.bytes([]), .bytes(big), .bytes([1])]) == [.bytes([]), .bytes(big), .bytes([1])])
    #expect(try roundTrip([.array(element: "y", [.byte(7)])]) == [.bytes([7])])
}

@Test func nestedContainersSurviveARoundTrip() throws {
    let properties = DBusValue.vardict(["UUID": .string("180d"), "Primary": .boolean(true), "Value": .bytes([1, 2])])
    let managed = DBusValue.dictionary(
        key: "o", value: "a{sa{sv}}",
        [.init(.objectPath("/app/s0"), .dictionary(key: "s", value: "a{sv}", [.init(.string("org.example.S"), properties)]))])
    let manufacturer = DBusValue.dictionary(key: "q", value: "v", [.init(.uint16(0x004C), .variant(.bytes([2, 0x15])))])
    let values: [DBusValue] = [
        managed, manufacturer, .structure([.unixFD(UnixFD(-1)), .uint16(23)]).droppingFD,
        .array(element: "as", [.strings(["read", "notify"]), .strings([])]),
        .array(element: "(ii)", []), .variant(.variant(.int32(5))), .dictionary(key: "s", value: "v", []),
    ]
    #expect(try roundTrip(values) == values)
    #expect(managed.signature == "a{oa{sa{sv}}}")
}

@Test func fileDescriptorsAreDuplicatedOnTheWayThrough() throws {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    defer { close(fds[0]); close(fds[1]) }
    let back = try roundTrip([.unixFD(UnixFD(fds[1])), .structure([.unixFD(UnixFD(fds[0])), .uint16(23)])])
    let writeEnd = try back[0].asUnixFD()
    let readEnd = try back[1].asStructure()[0].asUnixFD()
    #expect(writeEnd.rawValue != fds[1])
    defer { close(writeEnd.rawValue); close(readEnd.rawValue) }
    var byte: UInt8 = 0x2A
    #expect(write(writeEnd.rawValue, &byte, 1) == 1)
    var received: UInt8 = 0
    #expect(read(readEnd.rawValue, &received, 1) == 1)
    #expect(received == 0x2A)
}

@Test func malformedValuesAreRejectedBeforeLibdbusSeesThem() throws {
    #expect(throws: MarshalError.typeMismatch(expected: "s", actual: "i")) {
        try roundTrip([.array(element: "s", [.string("a"), .int32(1)])])
    }
    #expect(throws: MarshalError.self) { try roundTrip([.objectPath("not/a/path")]) }
    #expect(throws: MarshalError.self) { try roundTrip([.string("nul\0inside")]) }
    #expect(throws: MarshalError.self) { try roundTrip([.signature("a{")]) }
    #expect(throws: MarshalError.self) { try roundTrip([.structure([])]) }
    #expect(throws: MarshalError.self) { try roundTrip([.dictionary(key: "v", value: "s", [])]) }
    #expect(throws: MarshalError.self) {
        try Message.methodCall(destination: nil, path: "/x", interface: "bad..name", member: "M")
    }
}

@Test func typedAccessorsNameBothTypesOnAMismatch() throws {
    #expect(throws: MarshalError.typeMismatch(expected: "s", actual: "u")) { try DBusValue.uint32(1).asString() }
    let options = try DBusValue.vardict(["offset": .uint16(4), "device": .objectPath("/d")]).asVardict()
    #expect(try options["offset"]?.asUInt16() == 4)
    #expect(try options["device"]?.asObjectPath() == "/d")
}

@Test func signaturesSplitIntoCompleteTypes() {
    #expect(Signature("sa{sv}(ii)ay").completeTypes == ["s", "a{sv}", "(ii)", "ay"])
    #expect(Signature("a{oa{sa{sv}}}").isSingleCompleteType)
    #expect(!Signature("a{vs}").isValid)
    #expect(ObjectPath("/a/b").isDescendant(of: "/a"))
    #expect(!ObjectPath("/ab").isDescendant(of: "/a"))
    #expect(ObjectPath("/a").isDescendant(of: .root))
    #expect(!ObjectPath("/a/").isValid)
}

extension DBusValue {
    /// Test helper: `-1` is not a descriptor libdbus can duplicate, so swap the struct's fd for a plain int.
    fileprivate var droppingFD: DBusValue {
        guard case .structure(let fields) = self else { return self }
        return .structure(fields.map { if case .unixFD = $0 { .int32(-1) } else { $0 } })
    }
}
