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

    /// An ATT PDU in one ACL packet on `connection` (0x0040 unless said) of hci0 (first fragment, L2CAP channel 4).
    static func att(
        _ pdu: [UInt8], received: Bool, continuing: Bool = false, connection: UInt8 = 0x40
    ) -> (UInt16, UInt32, [UInt8]) {
        let l2cap = [UInt8(pdu.count), 0, 0x04, 0x00] + pdu
        let flags: UInt8 = continuing ? 0x10 : 0x20
        return (
            0, received ? BTSnoop.aclReceived : BTSnoop.aclSent, [connection, flags, UInt8(l2cap.count), 0] + l2cap
        )
    }

    /// Disconnect Complete (0x05) for connection 0x0040 on hci0, reason 0x13.
    static let disconnect = disconnect(0x40)

    /// Disconnect Complete (0x05) for `connection` on hci0, reason 0x13.
    static func disconnect(_ connection: UInt8) -> (UInt16, UInt32, [UInt8]) {
        (0, BTSnoop.eventPacket, [0x05, 0x04, 0x00, connection, 0x00, 0x13])
    }

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

    /// The ATT scenario's capture on 5.87 (records 6625, 6627, 6637 and 6639 of btmon.snoop; hci1 the central,
    /// connection 1): hci0 received the Write Request and sent a Read Response. The capture holds neither the Write
    /// Response nor the Read Request between them. btmon's text holds the Write Response (hci0's frames #1383-#1385):
    ///
    ///     > LE-ACL: Handle 1 [00:AA:01:.. flags 0x02 dlen 8  #1383 [hci0] 23:15:07.019426
    ///           ATT: Write Request (0x12) len 3
    ///             Handle: 0x000b Type: Client Supported Features (0x2b29)
    ///     bluetoothd[185]: < LE-ACL: Ha.. flags 0x00 dlen 5  #1384 [hci0] 23:15:07.098143
    ///           ATT: Write Response (0x13) len 0
    ///     bluetoothd[185]: < LE-ACL: H.. flags 0x00 dlen 12  #1385 [hci0] 23:15:07.292879
    ///           ATT: Read Response (0x0b) len 7
    ///             4c 61 62 20 41 54 54                             Lab ATT
    ///
    /// and bluetoothd's debug log records in the capture (6633, 6634) show the Read Request coming in before it:
    ///
    ///     src/shared/att.c:can_read_data() (chan 0x5630e69e2ca0) ATT PDU received: 0x0a
    ///     src/shared/gatt-server.c:handle_read_req() Read Req - handle: 0x0003
    static let lostWriteResponse: [(UInt16, UInt32, [UInt8])] = [
        (1, BTSnoop.aclSent, [0x01, 0x00, 0x08, 0x00, 0x04, 0x00, 0x04, 0x00, 0x12, 0x0B, 0x00, 0x05]),
        (0, BTSnoop.aclReceived, [0x01, 0x20, 0x08, 0x00, 0x04, 0x00, 0x04, 0x00, 0x12, 0x0B, 0x00, 0x05]),
        (
            0, BTSnoop.aclSent,
            [0x01, 0x00, 0x0C, 0x00, 0x08, 0x00, 0x04, 0x00, 0x0B, 0x4C, 0x61, 0x62, 0x20, 0x41, 0x54, 0x54]
        ),
        (1, BTSnoop.aclSent, [0x01, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x05, 0x00]),
    ]

    @Test func aReadResponseWhileAWriteIsOpenIsNotTakenForTheWritesAnswer() {
        let trace = BtmonTrace(Self.capture(Self.lostWriteResponse.map { ($0.0, $0.1, $0.2) }))
        let (requests, answers, cutOff) = trace.requestsAndAnswers(on: "hci0")
        // The Write Request was answered and a Read Request came in: the Read Response answers that one.
        #expect(requests == [0x12: 1, 0x0A: 1])
        #expect(answers == [0x12: 1, 0x0A: 1])
        #expect(cutOff.isEmpty)
        #expect(
            trace.missing(on: "hci0") == [
                .init(isRequest: false, opcode: 0x12, connection: 1, channel: 4, provedBy: 2),
                .init(isRequest: true, opcode: 0x0A, connection: 1, channel: 4, provedBy: 2),
            ])
        // hci1's requests are its client side: nothing of its server's.
        #expect(trace.requestsAndAnswers(on: "hci1").requests.isEmpty && trace.missing(on: "hci1").isEmpty)
    }

    @Test func aRequestWhileAnotherIsOpenOnItsBearerShowsTheFirstWasAnswered() {
        let trace = BtmonTrace(
            Self.capture(
                [
                    Self.att([0x12, 0x0B, 0x00, 0x05], received: true),
                    Self.att([0x0A, 0x03, 0x00], received: true),
                    Self.att([0x0B, 0x4C, 0x61, 0x62], received: false),
                ].map { ($0.0, $0.1, $0.2) }))
        let (requests, answers, _) = trace.requestsAndAnswers(on: "hci0")
        #expect(requests == [0x12: 1, 0x0A: 1] && answers == requests)
        #expect(
            trace.missing(on: "hci0").map(\.description) == [
                "answer to 0x12, connection 0x0040 channel 0x0004, shown by PDU 1"
            ])
    }

    @Test func requestsOnTwoLinksArePairedEachOnItsOwnAndCutOffByTheirOwnDisconnect() {
        let trace = BtmonTrace(
            Self.capture(
                [
                    Self.att([0x0A, 0x23, 0x00], received: true, connection: 0x40),
                    Self.att([0x12, 0x25, 0x00, 0x01], received: true, connection: 0x41),
                    Self.att([0x0A, 0x27, 0x00], received: true, connection: 0x42),
                    Self.att([0x0B, 0x30], received: false, connection: 0x40),
                    Self.att([0x01, 0x12, 0x25, 0x00, 0x03], received: false, connection: 0x41),
                    // 0x0042's read is open when its link goes down; 0x0040's is answered, so its link going down
                    // later cuts nothing off.
                    Self.disconnect(0x42), Self.disconnect(0x40),
                ].map { ($0.0, $0.1, $0.2) }))
        let (requests, answers, cutOff) = trace.requestsAndAnswers(on: "hci0")
        #expect(requests == [0x0A: 2, 0x12: 1])
        #expect(answers == [0x0A: 1, 0x12: 1])
        #expect(cutOff == [0x0A: 1])
        #expect(trace.missing(on: "hci0").isEmpty)
    }

    @Test func aSecondAnswerWithNoRequestOpenIsASurplusNotAMissingRequest() {
        let trace = BtmonTrace(
            Self.capture(
                [
                    Self.att([0x0A, 0x23, 0x00], received: true),
                    Self.att([0x0B, 0x30], received: false),
                    Self.att([0x0B, 0x30], received: false),
                ].map { ($0.0, $0.1, $0.2) }))
        let (requests, answers, _) = trace.requestsAndAnswers(on: "hci0")
        #expect(requests == [0x0A: 1] && answers == [0x0A: 2])
        #expect(trace.missing(on: "hci0").isEmpty)
    }
}
