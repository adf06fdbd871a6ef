import Testing

@testable import Lab

/// btmon's capture as the lab reads it: a request is answered, refused, or cut off by its link going down.
struct BtmonTraceTests {
    /// A capture in btmon's monitor format holding `packets` (controller index, monitor opcode, bytes).
    static func capture(_ packets: [(index: UInt16, opcode: UInt32, bytes: [UInt8])]) -> BTSnoop? {
        func bigEndian(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        var bytes = Array("btsnoop\0".utf8) + bigEndian(1) + bigEndian(BTSnoop.monitorDatalink)
        for packet in packets {
            let length = bigEndian(UInt32(packet.bytes.count))
            bytes += length + length + bigEndian(UInt32(packet.index) << 16 | packet.opcode) + bigEndian(0)
            bytes += [UInt8](repeating: 0, count: 8) + packet.bytes
        }
        return try? BTSnoop(bytes)
    }

    /// An ATT PDU in one ACL packet on connection 0x0040 of hci0 (first fragment, L2CAP channel 4).
    static func att(_ pdu: [UInt8], received: Bool, continuing: Bool = false) -> (UInt16, UInt32, [UInt8]) {
        let l2cap = [UInt8(pdu.count), 0, 0x04, 0x00] + pdu
        let flags: UInt8 = continuing ? 0x10 : 0x20
        return (0, received ? BTSnoop.aclReceived : BTSnoop.aclSent, [0x40, flags, UInt8(l2cap.count), 0] + l2cap)
    }

    /// Disconnect Complete (0x05) for connection 0x0040 on hci0, reason 0x13.
    static let disconnect: (UInt16, UInt32, [UInt8]) = (0, BTSnoop.eventPacket, [0x05, 0x04, 0x00, 0x40, 0x00, 0x13])

    /// Two reads on hci0: the first answered, the second open when the link drops; a third refused after it.
    static let story: [(UInt16, UInt32, [UInt8])] = [
        att([0x0A, 0x23, 0x00], received: true), att([0x0B, 0x30, 0x31], received: false),
        att([0x0A, 0x23, 0x00], received: true), disconnect,
        att([0x0A, 0x23, 0x00], received: true), att([0x01, 0x0A, 0x23, 0x00, 0x0F], received: false),
    ]

    @Test func aRequestWhoseLinkWentDownIsCutOffNotUnanswered() {
        let (requests, answers, cutOff) = BtmonTrace(Self.capture(Self.story.map { ($0.0, $0.1, $0.2) }))
            .requestsAndAnswers(on: "hci0")
        #expect(requests == [0x0A: 3])
        #expect(answers == [0x0A: 2])
        #expect(cutOff == [0x0A: 1])
    }

    @Test func aRequestStillOpenAtTheEndWithTheLinkUpIsNotCutOff() {
        let (requests, answers, cutOff) = BtmonTrace(Self.capture(Self.story.prefix(3).map { ($0.0, $0.1, $0.2) }))
            .requestsAndAnswers(on: "hci0")
        #expect(requests == [0x0A: 2] && answers == [0x0A: 1])
        #expect(cutOff.isEmpty)
    }

    @Test func errorResponsesAndOffsetsAreReadAndContinuingFragmentsAreNoPDU() {
        let trace = BtmonTrace(
            Self.capture(
                [
                    Self.att([0x16, 0x1B, 0x00, 0xF8, 0x01, 0xAA], received: true),
                    // The rest of a long PDU: no L2CAP header, whatever its first bytes look like.
                    Self.att([0x0A, 0x23, 0x00], received: true, continuing: true),
                    Self.att([0x01, 0x18, 0x00, 0x00, 0x0D], received: false),
                ].map { ($0.0, $0.1, $0.2) }))
        #expect(trace.pdus.count == 2)
        #expect(trace.received(0x16, handle: 0x1B, on: "hci0").first?.offset == 0x1F8)
        #expect(trace.errorsSent(by: "hci0") == [.init(request: 0x18, handle: 0, code: 0x0D)])
        #expect(BtmonTrace(capture: "/nonexistent/btmon.snoop").pdus.isEmpty)
    }
}
