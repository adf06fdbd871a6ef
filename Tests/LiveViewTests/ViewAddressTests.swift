import Testing

@testable import LiveView

/// `--listen`: the forms a user types, and the ones refused with a reason.
@Suite struct ViewAddressTests {
    @Test(arguments: [
        ("127.0.0.1:8080", "127.0.0.1:8080", true), ("localhost:9000", "127.0.0.1:9000", true),
        ("8080", "127.0.0.1:8080", true), ("[::1]:8080", "[::1]:8080", true), ("0.0.0.0:0", "0.0.0.0:0", false),
        ("192.168.1.20:8080", "192.168.1.20:8080", false), ("[::]:80", "[::]:80", false),
    ])
    func anAddressIsParsedAndToldLoopbackOrNot(text: String, spelled: String, loopback: Bool) throws {
        let address = try ViewAddress(parsing: text)
        #expect(address.description == spelled)
        #expect(address.isLoopback == loopback)
    }

    @Test(arguments: [
        ("example.com:80", "the host must be an IP address"), ("127.0.0.1:99999", "the port must be a number"),
        ("::1:8080", "write an IPv6 address in brackets"), ("[::1]8080", "expected [IPV6]:PORT"),
        ("1.2.3:80", "the host must be an IP address"),
    ])
    func aWrongAddressSaysWhatIsWrong(text: String, reason: String) {
        #expect {
            try ViewAddress(parsing: text)
        } throws: { error in
            "\(error)".contains(reason) && "\(error)".contains(text)
        }
    }
}
