import Testing

@testable import Lab

/// The btsnoop reader on captures built by hand, in btmon's monitor format.
struct BTSnoopTests {
    /// A capture: the header, then one record per (index, monitor opcode, packet).
    static func capture(datalink: UInt32 = 2001, _ records: [(UInt16, UInt16, [UInt8])]) -> [UInt8] {
        func be32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        var bytes = Array("btsnoop\0".utf8) + be32(1) + be32(datalink)
        for (index, opcode, packet) in records {
            let flags = UInt32(index) << 16 | UInt32(opcode)
            bytes += be32(UInt32(packet.count)) + be32(UInt32(packet.count)) + be32(flags) + be32(0)
            bytes += [UInt8](repeating: 0, count: 8) + packet
        }
        return bytes
    }

    /// An HCI command packet: opcode (little endian), length, parameters.
    static func command(_ opcode: UInt16, _ parameters: [UInt8]) -> [UInt8] {
        [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters
    }

    @Test func legacyAndExtendedAdvertisingDataAreReadPerController() throws {
        let legacy = [UInt8(3)] + [0x02, 0x01, 0x06] + [UInt8](repeating: 0, count: 28)
        let extended: [UInt8] = [0x01, 0x03, 0x01, 0x04, 0x03, 0x03, 0x0D, 0x18]
        let scan: [UInt8] = [0x01, 0x03, 0x01, 0x03, 0x02, 0x09, 0x41]
        let bytes = Self.capture([
            (0, 2, Self.command(0x2008, legacy)),
            (1, 2, Self.command(0x2037, extended)),
            (0, 2, Self.command(0x2037, extended)),
            (0, 3, Self.command(0x2037, extended)),  // an event, not a command: ignored
            (0, 2, Self.command(0x2038, scan)),
        ])
        let capture = try BTSnoop(bytes)
        #expect(capture.commands.count == 4)
        #expect(capture.advertisingData(index: 0) == [[0x02, 0x01, 0x06], [0x03, 0x03, 0x0D, 0x18]])
        #expect(capture.advertisingData(index: 1) == [[0x03, 0x03, 0x0D, 0x18]])
        #expect(capture.scanResponseData(index: 0) == [[0x02, 0x09, 0x41]])
        #expect(capture.scanResponseData(index: 2).isEmpty)
    }

    @Test func aRecordCutShortEndsTheCapture() throws {
        var bytes = Self.capture([(0, 2, Self.command(0x2009, [1, 0x41]))])
        bytes += Self.capture([(0, 2, Self.command(0x2009, [1, 0x42]))]).dropFirst(16).dropLast(2)
        #expect(try BTSnoop(bytes).commands.count == 1)
    }

    @Test func aDataLengthPastTheParametersIsSkipped() throws {
        let capture = try BTSnoop(Self.capture([(0, 2, Self.command(0x2008, [31, 0x02, 0x01]))]))
        #expect(capture.advertisingData(index: 0).isEmpty)
    }

    @Test func otherFilesAreRefused() {
        #expect(throws: BTSnoop.ReadError.notBTSnoop) { try BTSnoop(Array("hello".utf8)) }
        #expect(throws: BTSnoop.ReadError.unsupportedDatalink(1002)) {
            try BTSnoop(Self.capture(datalink: 1002, []))
        }
    }
}
