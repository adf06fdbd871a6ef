import Testing

@testable import Lab

/// Versions and kernel releases sort as a person reads them: the lab picks the newest kernel and the BlueZ builds by
/// this order, and `isAtLeast` decides what each system's tests expect.
@Suite struct NumericOrderTests {
    @Test func digitRunsCompareAsNumbers() {
        #expect(NumericOrder.ascending("5.9", "5.66"))
        #expect(NumericOrder.ascending("5.66", "5.82"))
        #expect(!NumericOrder.ascending("5.82", "5.66"))
        #expect(NumericOrder.ascending("6.1.0-27-amd64", "6.12.0-1-amd64"))
        #expect(["5.87", "5.66", "5.9", "5.82"].sorted(by: NumericOrder.ascending) == ["5.9", "5.66", "5.82", "5.87"])
    }

    @Test func equalTextIsNotAscendingAndAPrefixComesFirst() {
        #expect(!NumericOrder.ascending("5.82", "5.82"))
        #expect(NumericOrder.ascending("5.82", "5.82.1"))
        #expect(!NumericOrder.ascending("5.82.1", "5.82"))
        #expect(!NumericOrder.ascending("5.082", "5.82") && !NumericOrder.ascending("5.82", "5.082"))
        #expect(NumericOrder.ascending("a", "b") && NumericOrder.ascending("5.82", "5.82a"))
    }

    @Test func isAtLeastReadsTheSameOrder() {
        let bluez = BlueZInstall(version: "5.66", bluetoothd: "/usr/sbin/bluetoothd", toolDirectory: nil)
        #expect(bluez.isAtLeast("5.66") && bluez.isAtLeast("5.9") && !bluez.isAtLeast("5.69"))
    }
}
