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

    /// An LE Extended Advertising Report event (7.7.65.13) with one report from 00:AA:01:00:00:00.
    static func report(eventType: UInt16, data: [UInt8]) -> [UInt8] {
        let address: [UInt8] = [0x00, 0x00, 0x00, 0x01, 0xAA, 0x00]  // little endian
        let fields: [UInt8] =
            [UInt8(eventType & 0xFF), UInt8(eventType >> 8), 0x00] + address + [0x01, 0x01, 0x00, 0x7F, 0x7F, 0, 0, 0]
            + [UInt8](repeating: 0, count: 6) + [UInt8(data.count)] + data
        let parameters = [0x0D, 0x01] + fields
        return [0x3E, UInt8(parameters.count)] + parameters
    }

    @Test func extendedAdvertisingReportsAreReadWithTheirSenderAndCompleteness() throws {
        let data = (0..<120).map { UInt8($0) }
        let capture = try BTSnoop(
            Self.capture([
                (1, 3, Self.report(eventType: 0x0001, data: data)),  // connectable, extended, complete
                (1, 3, Self.report(eventType: 0x0033, data: [0x02, 0x01, 0x06])),  // legacy, data truncated
                (1, 2, Self.report(eventType: 0x0001, data: [1])),  // a command, not an event: ignored
                (1, 3, [0x0E, 0x04, 0x01, 0x37, 0x20, 0x00]),  // Command Complete: no report
            ]))
        let reports = capture.advertisingReports
        #expect(reports.count == 2)
        #expect(reports.first?.address == "00:AA:01:00:00:00")
        #expect(reports.first?.data == data && reports.first?.isComplete == true)
        #expect(reports.first?.isLegacy == false && reports.first?.index == 1)
        #expect(reports.last?.isLegacy == true && reports.last?.isComplete == false)
    }

    @Test func aReportLongerThanItsEventIsDropped() throws {
        var packet = Self.report(eventType: 0x0001, data: [1, 2, 3])
        packet.removeLast()
        #expect(try BTSnoop(Self.capture([(0, 3, packet)])).advertisingReports.isEmpty)
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
