import Testing

/// btmon's text as the lab reads it: a request is answered, refused, or cut off by its link going down.
struct BtmonTraceTests {
    /// Two reads on hci0: the first answered, the second open when the link drops.
    static let trace = """
        > ACL Data RX: Handle 64 flags 0x02 dlen 7                 #10 [hci0] 21:46:55.100000
              ATT: Read Request (0x0a) len 2
                Handle: 0x0023
        < ACL Data TX: Handle 64 flags 0x00 dlen 11                #11 [hci0] 21:46:55.110000
              ATT: Read Response (0x0b) len 6
        > ACL Data RX: Handle 64 flags 0x02 dlen 7                 #12 [hci0] 21:46:58.100000
              ATT: Read Request (0x0a) len 2
                Handle: 0x0023
        > HCI Event: Disconnect Complete (0x05) plen 4             #13 [hci0] 21:47:02.255526
                Status: Success (0x00)
        > ACL Data RX: Handle 65 flags 0x02 dlen 7                 #14 [hci0] 21:47:03.100000
              ATT: Read Request (0x0a) len 2
                Handle: 0x0023
        < ACL Data TX: Handle 65 flags 0x00 dlen 9                 #15 [hci0] 21:47:03.110000
              ATT: Error Response (0x01) len 4
                Read Request (0x0a)
                Handle: 0x0023
                Error: Insufficient Encryption (0x0f)
        """

    @Test func aRequestWhoseLinkWentDownIsCutOffNotUnanswered() {
        let (requests, answers, cutOff) = BtmonTrace(Self.trace).requestsAndAnswers(on: "hci0")
        #expect(requests == [0x0A: 3])
        #expect(answers == [0x0A: 2])
        #expect(cutOff == [0x0A: 1])
    }

    @Test func aRequestStillOpenAtTheEndWithTheLinkUpIsNotCutOff() {
        let open = Self.trace.split(separator: "\n").prefix(8).joined(separator: "\n")
        let (requests, answers, cutOff) = BtmonTrace(open).requestsAndAnswers(on: "hci0")
        #expect(requests == [0x0A: 2] && answers == [0x0A: 1])
        #expect(cutOff.isEmpty)
    }

    /// btmon 5.87 names ACL packets `LE-ACL:` and puts the sending process before the direction mark.
    @Test func btmon587sLEACLLinesAndProcessPrefixesAreRead() {
        let trace = """
            > LE-ACL: Handle 1 [00:AA:01:00.. flags 0x02 dlen 7  #82 [hci1] 18:09:13.144330
                  ATT: Exchange MTU Request (0x02) len 2
                    Client RX MTU: 517
            gatttool[248]: < LE-ACL: Handle.. flags 0x00 dlen 9  #83 [hci1] 18:09:13.147239
                  ATT: Error Response (0x01) len 4
                    Exchange MTU Request (0x02)
                    Handle: 0x0000
                    Error: Request Not Supported (0x06)
            bluetoothd[158]: = [0x5557b6b2bef0] src/shared/gatt-client...   18:09:13.439771
                  ATT: Read Request (0x0a) len 2
            """
        let pdus = BtmonTrace(trace).pdus
        #expect(pdus.count == 2, "the note after bluetoothd's prefix is no packet: \(pdus)")
        #expect(pdus.first?.isReceived == true && pdus.first?.opcode == 0x02 && pdus.first?.controller == "hci1")
        #expect(pdus.last?.isReceived == false && pdus.last?.refusedOpcode == 0x02 && pdus.last?.errorCode == 0x06)
    }
}
