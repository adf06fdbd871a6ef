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
}
