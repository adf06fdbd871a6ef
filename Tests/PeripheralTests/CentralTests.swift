import Testing

@testable import Peripheral

struct CentralTests {
    @Test(arguments: [(23, 20), (185, 182), (515, 512), (517, 512), (65535, 512)])
    func anUpdateIsTheMTUMinusItsHeaderButNeverLongerThanAnAttributeValue(mtu: Int, limit: Int) {
        // bluetoothd 5.66 reads notify-socket datagrams into 512 bytes: at MTU 517 a 514-byte update lost 2 bytes.
        #expect(Central(id: "phone", attMTU: mtu).maximumUpdateValueLength == limit)
    }

}
