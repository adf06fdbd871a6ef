/// A reader for the captures `btmon -w FILE` writes: what the host programmed into a controller, and every packet in
/// order for the lab's tests (ATT over ACL data, events).
///
/// The format is btsnoop (RFC 1761's snoop layout, big-endian): a 16-byte header ("btsnoop\0", version 1, the
/// datalink type), then records of a 24-byte header (original length, included length, flags, drops, timestamp)
/// and the packet. btmon writes datalink 2001, "monitor": a record's flags hold the controller index in the high
/// 16 bits and the monitor opcode in the low 16 (BlueZ src/shared/btsnoop.h). The lab reads captures itself because
/// 5.66's `btmon -r` crashes on its own files (docs/lab.md).
public struct BTSnoop: Sendable, Equatable {
    /// One HCI command the host sent to a controller.
    public struct Command: Sendable, Equatable {
        /// The controller's index: 0 for hci0.
        public var index: UInt16
        /// The HCI opcode (OGF << 10 | OCF): 0x2008 for LE Set Advertising Data.
        public var opcode: UInt16
        /// The command's parameters.
        public var parameters: [UInt8]
    }

    /// Why a capture could not be read.
    public enum ReadError: Error, Equatable, CustomStringConvertible {
        /// The file does not start with the btsnoop header.
        case notBTSnoop
        /// The datalink is not btmon's monitor format (2001).
        case unsupportedDatalink(UInt32)

        /// A one-line message.
        public var description: String {
            switch self {
            case .notBTSnoop: "not a btsnoop capture (no \"btsnoop\\0\" header)"
            case .unsupportedDatalink(let type): "btsnoop datalink \(type) is not btmon's monitor format (2001)"
            }
        }
    }

    /// HCI opcodes the lab looks for (Core Spec Vol 4, Part E, 7.8).
    public enum Opcode {
        /// LE Set Advertising Data: length, then 31 bytes (7.8.7).
        public static let setAdvertisingData: UInt16 = 0x2008
        /// LE Set Scan Response Data: length, then 31 bytes (7.8.8).
        public static let setScanResponseData: UInt16 = 0x2009
        /// LE Set Extended Advertising Data: handle, operation, fragment preference, length, data (7.8.54).
        public static let setExtendedAdvertisingData: UInt16 = 0x2037
        /// LE Set Extended Scan Response Data: the same layout (7.8.55).
        public static let setExtendedScanResponseData: UInt16 = 0x2038
    }

    /// The monitor opcode of a command packet (src/shared/btsnoop.h, BTSNOOP_OPCODE_COMMAND_PKT).
    static let commandPacket: UInt32 = 2
    /// The datalink type of btmon's captures (BTSNOOP_FORMAT_MONITOR).
    static let monitorDatalink: UInt32 = 2001
    /// The monitor opcode of an event packet (BTSNOOP_OPCODE_EVENT_PKT).
    static let eventPacket: UInt32 = 3
    /// The monitor opcodes of ACL data the host sent and received (BTSNOOP_OPCODE_ACL_TX_PKT, _ACL_RX_PKT).
    static let aclSent: UInt32 = 4
    static let aclReceived: UInt32 = 5

    /// One record of the capture.
    public struct Packet: Sendable, Equatable {
        /// The controller's index: 0 for hci0.
        public var index: UInt16
        /// The monitor opcode: 2 command, 3 event, 4 ACL sent, 5 ACL received, ...
        public var opcode: UInt32
        /// The packet as the monitor recorded it (for ACL: handle and flags, length, then the L2CAP bytes).
        public var bytes: [UInt8]
    }

    /// Every record, in the capture's order.
    public var packets: [Packet]

    /// Every HCI command in the capture, in order. A record cut short at the end (btmon killed mid-write) ends
    /// the list.
    public var commands: [Command]
    /// Every HCI event a controller passed up, in order.
    public var events: [Event]

    /// One HCI event a controller passed up to the host.
    public struct Event: Sendable, Equatable {
        /// The controller's index.
        public var index: UInt16
        /// The event packet: event code, parameter length, parameters.
        public var packet: [UInt8]
    }

    /// Parses a capture; throws `ReadError` when it is not btmon's btsnoop format.
    public init(_ bytes: [UInt8]) throws(ReadError) {
        guard bytes.count >= 16, Array(bytes[0..<8]) == Array("btsnoop\0".utf8) else { throw .notBTSnoop }
        let datalink = Self.uint32(bytes, at: 12)
        guard datalink == Self.monitorDatalink else { throw .unsupportedDatalink(datalink) }
        var commands: [Command] = []
        var events: [Event] = []
        var packets: [Packet] = []
        var offset = 16
        while offset + 24 <= bytes.count {
            let included = Int(Self.uint32(bytes, at: offset + 4))
            let flags = Self.uint32(bytes, at: offset + 8)
            let start = offset + 24
            guard start + included <= bytes.count else { break }
            packets.append(
                Packet(
                    index: UInt16(flags >> 16), opcode: flags & 0xFFFF, bytes: Array(bytes[start..<(start + included)]))
            )
            if flags & 0xFFFF == Self.commandPacket, included >= 3 {
                let opcode = UInt16(bytes[start]) | UInt16(bytes[start + 1]) << 8
                let length = min(Int(bytes[start + 2]), included - 3)
                commands.append(
                    Command(
                        index: UInt16(flags >> 16), opcode: opcode,
                        parameters: Array(bytes[(start + 3)..<(start + 3 + length)])))
            } else if flags & 0xFFFF == Self.eventPacket, included >= 2 {
                events.append(Event(index: UInt16(flags >> 16), packet: Array(bytes[start..<(start + included)])))
            }
            offset = start + included
        }
        self.commands = commands
        self.events = events
        self.packets = packets
    }

    /// The data of every advertising-data command (legacy or extended) sent to controller `index`, in order.
    public func advertisingData(index: UInt16) -> [[UInt8]] {
        data(index: index, legacy: Opcode.setAdvertisingData, extended: Opcode.setExtendedAdvertisingData)
    }

    /// The data of every scan-response command (legacy or extended) sent to controller `index`, in order.
    public func scanResponseData(index: UInt16) -> [[UInt8]] {
        data(index: index, legacy: Opcode.setScanResponseData, extended: Opcode.setExtendedScanResponseData)
    }

    private func data(index: UInt16, legacy: UInt16, extended: UInt16) -> [[UInt8]] {
        commands.filter { $0.index == index }.compactMap { command in
            let p = command.parameters
            switch command.opcode {
            case legacy:
                // The significant part: the length byte says how much of the 31 bytes counts.
                guard let length = p.first, p.count >= 1 + Int(length) else { return nil }
                return Array(p[1..<(1 + Int(length))])
            case extended:
                guard p.count >= 4, p.count >= 4 + Int(p[3]) else { return nil }
                return Array(p[4..<(4 + Int(p[3]))])
            default:
                return nil
            }
        }
    }

    private static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
