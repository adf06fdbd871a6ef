/// Cuts an HCI UART byte stream into whole packets, each with its packet indicator first.
///
/// The framing is the UART transport's (Core Specification 5.4, Vol 4, Part A, §2: 0x01 command, 0x02 ACL data,
/// 0x03 synchronous data, 0x04 event, 0x05 ISO data), each followed by its own header with the payload length
/// (Vol 4, Part E, §5.4). A TCP stream splits and joins packets anywhere; this reassembles them.
struct H4Framer: Sendable {
    /// A byte where a packet indicator belongs that is none of the five: the stream is out of step and nothing
    /// after it can be framed.
    struct UnknownIndicator: Error, Equatable {
        /// The byte found.
        let byte: UInt8
    }

    private var buffer: [UInt8] = []
    private var start = 0

    /// An empty framer.
    init() {}

    /// Adds bytes as they arrived.
    mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next whole packet, indicator first; nil until one has arrived in full.
    mutating func next() throws(UnknownIndicator) -> [UInt8]? {
        let available = buffer.count - start
        guard available > 0 else { return nil }
        let indicator = buffer[start]
        guard let header = Self.headerLength(of: indicator) else { throw UnknownIndicator(byte: indicator) }
        guard available >= 1 + header else { return nil }
        let total = 1 + header + Self.payloadLength(indicator, header: buffer[(start + 1)...])
        guard available >= total else { return nil }
        let packet = Array(buffer[start..<start + total])
        start += total
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 {
            buffer.removeFirst(start)
            start = 0
        }
        return packet
    }

    /// The header's length after the indicator, or nil for a byte that is no indicator.
    static func headerLength(of indicator: UInt8) -> Int? {
        switch indicator {
        case 0x01: 3  // opcode (2), parameter length (1)
        case 0x02: 4  // handle and flags (2), data length (2)
        case 0x03: 3  // handle and flags (2), data length (1)
        case 0x04: 2  // event code (1), parameter length (1)
        case 0x05: 4  // handle and flags (2), data length (14 bits)
        default: nil
        }
    }

    /// The payload length a header announces.
    static func payloadLength(_ indicator: UInt8, header: ArraySlice<UInt8>) -> Int {
        let h = Array(header.prefix(4))
        switch indicator {
        case 0x01: return Int(h[2])
        case 0x02: return Int(h[2]) | Int(h[3]) << 8
        case 0x03: return Int(h[2])
        case 0x04: return Int(h[1])
        default: return Int(h[2]) | Int(h[3] & 0x3F) << 8
        }
    }
}
