/// One WebSocket frame (RFC 6455, section 5.2), as the view reads a page's and writes its own: no extensions, so no
/// reserved bit is ever set.
struct WebSocketFrame: Sendable, Equatable {
    /// What a frame carries (section 5.2, "Opcode").
    enum Opcode: UInt8, Sendable {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA

        /// Close, ping and pong (section 5.5): at most 125 bytes, never fragmented.
        var isControl: Bool { rawValue & 0x8 != 0 }
    }

    /// Whether this is a message's last frame.
    var fin: Bool
    /// What it carries.
    var opcode: Opcode
    /// The payload, unmasked.
    var payload: [UInt8]

    /// A whole text message in one frame.
    static func text(_ text: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, payload: Array(text.utf8))
    }

    /// A close frame with `code` (section 7.4.1) and a short reason.
    static func close(code: UInt16, reason: String = "") -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8))
    }

    /// Close codes the view sends (section 7.4.1).
    enum CloseCode {
        /// 1002: the page broke the protocol.
        static let protocolError: UInt16 = 1002
        /// 1003: a kind of data the view does not take (binary).
        static let unsupportedData: UInt16 = 1003
        /// 1007: a text message that is not UTF-8.
        static let invalidData: UInt16 = 1007
        /// 1009: a message longer than the view reads.
        static let messageTooBig: UInt16 = 1009
    }

    /// The frame as a server sends it: unmasked (section 5.1), the length in 7, 16 or 64 bits.
    var bytes: [UInt8] {
        var head: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        switch payload.count {
        case ..<126: head.append(UInt8(payload.count))
        case ..<65_536: head += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            head +=
                [127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(payload.count) >> (8 * UInt64($0))) }
        }
        return head + payload
    }
}

/// Reads a page's frames from the bytes its connection brings, one at a time, refusing what RFC 6455 forbids a
/// client (section 5.1: an unmasked frame; 5.2: a reserved bit or opcode; 5.5: a long or fragmented control frame)
/// and what the view will not buffer (a frame longer than `longest`).
struct WebSocketFrameReader {
    /// Why the connection must close: the close code to send (section 7.4.1).
    struct Violation: Error, Equatable {
        /// The code.
        let code: UInt16
    }

    private let longest: Int
    private var buffer: [UInt8] = []

    /// A reader that refuses frames whose payload is longer than `longest` bytes.
    init(longest: Int) { self.longest = longest }

    /// Adds bytes read from the connection.
    mutating func append(_ bytes: some Collection<UInt8>) { buffer += bytes }

    /// The next whole frame, nil until its bytes are all there; throws the close code of a frame that breaks the
    /// protocol or the length limit (before its payload is buffered).
    mutating func next() throws(Violation) -> WebSocketFrame? {
        guard buffer.count >= 2 else { return nil }
        let first = buffer[0]
        let second = buffer[1]
        guard first & 0x70 == 0, let opcode = WebSocketFrame.Opcode(rawValue: first & 0x0F) else {
            throw Violation(code: WebSocketFrame.CloseCode.protocolError)
        }
        guard second & 0x80 != 0 else { throw Violation(code: WebSocketFrame.CloseCode.protocolError) }
        var length = Int(second & 0x7F)
        var offset = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            let wide = buffer[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard wide <= UInt64(Int.max) else { throw Violation(code: WebSocketFrame.CloseCode.messageTooBig) }
            length = Int(wide)
            offset = 10
        }
        if opcode.isControl && (length > 125 || first & 0x80 == 0) {
            throw Violation(code: WebSocketFrame.CloseCode.protocolError)
        }
        guard length <= longest else { throw Violation(code: WebSocketFrame.CloseCode.messageTooBig) }
        guard buffer.count >= offset + 4 + length else { return nil }
        let mask = Array(buffer[offset..<offset + 4])
        let start = offset + 4
        let payload = buffer[start..<start + length].enumerated().map { $0.element ^ mask[$0.offset & 3] }
        buffer.removeFirst(start + length)
        return WebSocketFrame(fin: first & 0x80 != 0, opcode: opcode, payload: payload)
    }
}
