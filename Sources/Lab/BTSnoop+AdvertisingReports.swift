// What a scanning controller reported: LE Extended Advertising Report events (Core Spec Vol 4, Part E, 7.7.65.13),
// which a Bluetooth 5 controller sends for legacy and extended advertisements alike once the host scans with the
// extended commands (the kernel does when the controller supports them).
extension BTSnoop {
    /// One report of an advertisement a controller received.
    public struct AdvertisingReport: Sendable, Equatable {
        /// The receiving controller's index: 1 for hci1.
        public var index: UInt16
        /// The advertiser's address as written (`00:AA:01:00:00:00`).
        public var address: String
        /// Whether it came in legacy PDUs (event type bit 4); false for extended advertising.
        public var isLegacy: Bool
        /// Whether the data is complete (data status 00, bits 5-6); false while more fragments follow or when the
        /// controller gave up on them.
        public var isComplete: Bool
        /// The advertising data.
        public var data: [UInt8]
    }

    /// The LE Meta event code, and the subevent of LE Extended Advertising Report.
    static let leMetaEvent: UInt8 = 0x3E
    static let extendedAdvertisingReport: UInt8 = 0x0D

    /// Every LE Extended Advertising Report in the capture, one element per report, in order. A report whose
    /// lengths run past its event ends that event's list.
    public var advertisingReports: [AdvertisingReport] {
        events.flatMap { event -> [AdvertisingReport] in
            let (index, packet) = (event.index, event.packet)
            // Event code, parameter length, subevent, number of reports.
            guard packet.count >= 4, packet[0] == Self.leMetaEvent, packet[2] == Self.extendedAdvertisingReport
            else { return [] }
            var reports: [AdvertisingReport] = []
            var offset = 4
            for _ in 0..<Int(packet[3]) {
                // Event type (2), address type (1), address (6), primary and secondary PHY, SID, TX power, RSSI
                // (1 each), periodic interval (2), direct address type (1) and address (6): 24 bytes, then the
                // data length and the data.
                guard offset + 24 <= packet.count else { break }
                let length = Int(packet[offset + 23])
                guard offset + 24 + length <= packet.count else { break }
                let eventType = UInt16(packet[offset]) | UInt16(packet[offset + 1]) << 8
                let address = packet[(offset + 3)..<(offset + 9)].reversed().map { byte in
                    let digits = String(byte, radix: 16, uppercase: true)
                    return byte < 0x10 ? "0" + digits : digits
                }
                reports.append(
                    AdvertisingReport(
                        index: index, address: address.joined(separator: ":"), isLegacy: eventType & 0x10 != 0,
                        isComplete: (eventType >> 5) & 0x3 == 0,
                        data: Array(packet[(offset + 24)..<(offset + 24 + length)])))
                offset += 24 + length
            }
            return reports
        }
    }
}
