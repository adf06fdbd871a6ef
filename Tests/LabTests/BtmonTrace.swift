import Foundation

/// The ATT PDUs in btmon's text output (`btmon -t`, BlueZ 5.66 to 5.87), with the controller that logged each one and its
/// direction, so a lab test can count what really went over the air: requests received and answers sent.
struct BtmonTrace {
    /// One ATT PDU as btmon decoded it.
    struct PDU: Equatable {
        /// `hci0`, `hci1`...
        var controller: String
        /// True for `> ACL Data RX` or `> LE-ACL` (received by `controller`), false for `<`.
        var isReceived: Bool
        var opcode: UInt8
        /// The first `Handle:` line, if any.
        var handle: Int?
        /// The `Offset:` line (Read Blob, Prepare Write), if any.
        var offset: Int?
        /// For an Error Response: the request it refuses and its error code.
        var refusedOpcode: UInt8?
        var errorCode: UInt8?
    }

    /// ATT request opcodes (Core Spec Vol 3, Part F, 3.4.8): each is answered by `opcode + 1` or Error Response.
    static let requestOpcodes: Set<UInt8> = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20]
    static let errorResponse: UInt8 = 0x01

    /// Every ATT PDU, in btmon's order.
    let pdus: [PDU]
    /// For each PDU index, how many Disconnect Complete events each controller logged before it (and, at
    /// `pdus.count`, in all): lets `requestsAndAnswers` tell a request whose link went down from one left unanswered.
    private let disconnectsBefore: [[String: Int]]

    /// Parses btmon's text; lines it does not know are skipped.
    init(_ text: String) {
        var pdus: [PDU] = []
        var disconnects: [String: Int] = [:]
        var disconnectsBefore: [[String: Int]] = []
        var link: (controller: String, isReceived: Bool)?
        var current: PDU?
        func finish() {
            if let pdu = current {
                pdus.append(pdu)
                disconnectsBefore.append(disconnects)
            }
            current = nil
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let header = Self.header(line) {
                finish()
                link = nil
                // "> ACL Data RX" up to 5.8x; 5.87 says "> LE-ACL:" (or "BR-ACL:").
                if header.contains("ACL Data") || header.contains("ACL: "), let controller = Self.controller(in: header)
                {
                    link = (controller, header.hasPrefix(">"))
                } else if header.contains("Disconnect Complete"), let controller = Self.controller(in: header) {
                    disconnects[controller, default: 0] += 1
                }
            } else if trimmed.hasPrefix("ATT: "), let link, let opcode = Self.lastHexCode(in: trimmed, before: " len") {
                finish()
                current = PDU(controller: link.controller, isReceived: link.isReceived, opcode: opcode)
            } else if current != nil {
                if trimmed.hasPrefix("Handle: "), current?.handle == nil {
                    current?.handle = Self.hexNumber(after: "Handle: ", in: trimmed)
                } else if trimmed.hasPrefix("Offset: ") {
                    current?.offset = Self.hexNumber(after: "Offset: ", in: trimmed)
                } else if trimmed.hasPrefix("Error: ") {
                    current?.errorCode = Self.lastHexCode(in: trimmed, before: nil)
                } else if current?.opcode == Self.errorResponse, current?.refusedOpcode == nil,
                    trimmed.hasSuffix(")"), let code = Self.lastHexCode(in: trimmed, before: nil)
                {
                    current?.refusedOpcode = code
                }
            }
        }
        finish()
        disconnectsBefore.append(disconnects)
        self.pdus = pdus
        self.disconnectsBefore = disconnectsBefore
    }

    /// Requests `controller` received, and answers it sent: for a server, equal when every request was answered.
    /// Also the requests whose link went down before any answer (`cutOff`): ATT is one request at a time on a
    /// bearer (Core Spec Vol 3, Part F, 3.3.2), so a request still open at `controller`'s next Disconnect Complete
    /// can never be answered.
    func requestsAndAnswers(
        on controller: String
    ) -> (requests: [UInt8: Int], answers: [UInt8: Int], cutOff: [UInt8: Int]) {
        var requests: [UInt8: Int] = [:]
        var answers: [UInt8: Int] = [:]
        var cutOff: [UInt8: Int] = [:]
        var open: (opcode: UInt8, disconnects: Int)?
        for (index, pdu) in pdus.enumerated() where pdu.controller == controller {
            let disconnects = disconnectsBefore[index][controller] ?? 0
            if let request = open, disconnects > request.disconnects {
                cutOff[request.opcode, default: 0] += 1
                open = nil
            }
            if pdu.isReceived, Self.requestOpcodes.contains(pdu.opcode) {
                requests[pdu.opcode, default: 0] += 1
                open = (pdu.opcode, disconnects)
            } else if !pdu.isReceived, pdu.opcode == Self.errorResponse, let refused = pdu.refusedOpcode,
                Self.requestOpcodes.contains(refused)
            {
                answers[refused, default: 0] += 1
                open = nil
            } else if !pdu.isReceived, Self.requestOpcodes.contains(pdu.opcode &- 1) {
                answers[pdu.opcode &- 1, default: 0] += 1
                open = nil
            }
        }
        if let request = open, (disconnectsBefore.last?[controller] ?? 0) > request.disconnects {
            cutOff[request.opcode, default: 0] += 1
        }
        return (requests, answers, cutOff)
    }

    /// Error Responses `controller` sent, as (refused request opcode, handle, code).
    func errorsSent(by controller: String) -> [ErrorSent] {
        pdus.filter { $0.controller == controller && !$0.isReceived && $0.opcode == Self.errorResponse }
            .map { ErrorSent(request: $0.refusedOpcode ?? 0, handle: $0.handle ?? 0, code: $0.errorCode ?? 0) }
    }

    /// One Error Response.
    struct ErrorSent: Hashable, CustomStringConvertible {
        var request: UInt8
        var handle: Int
        var code: UInt8
        var description: String { String(format: "op 0x%02x handle 0x%04x code 0x%02x", request, handle, code) }
    }

    /// Requests `controller` received with `opcode` for `handle`.
    func received(_ opcode: UInt8, handle: Int, on controller: String) -> [PDU] {
        pdus.filter { $0.controller == controller && $0.isReceived && $0.opcode == opcode && $0.handle == handle }
    }

    /// A packet's first line from its direction mark on (`<`, `>`, `@`, `=`), or nil for a detail line. btmon 5.87
    /// puts the process that sent the packet before the mark when it knows it: `gatttool[248]: < LE-ACL: ...`.
    private static func header(_ line: Substring) -> Substring? {
        if let first = line.first, "<>@=".contains(first) { return line }
        guard let first = line.first, !first.isWhitespace, let close = line.range(of: "]: "),
            line[..<close.lowerBound].contains("["), let mark = line[close.upperBound...].first, "<>@=".contains(mark)
        else { return nil }
        return line[close.upperBound...]
    }

    private static func controller(in line: Substring) -> String? {
        guard let open = line.range(of: "[hci"), let close = line[open.upperBound...].firstIndex(of: "]") else {
            return nil
        }
        return "hci" + line[open.upperBound..<close]
    }

    /// The last `(0xNN)` in `text` (before `marker` when given).
    private static func lastHexCode(in text: String, before marker: String?) -> UInt8? {
        var scope = Substring(text)
        if let marker, let end = text.range(of: marker) { scope = text[..<end.lowerBound] }
        guard let open = scope.range(of: "(0x", options: .backwards),
            let close = scope[open.upperBound...].firstIndex(of: ")")
        else { return nil }
        return UInt8(scope[open.upperBound..<close], radix: 16)
    }

    private static func hexNumber(after prefix: String, in text: String) -> Int? {
        let rest = text.dropFirst(prefix.count).prefix { !$0.isWhitespace }
        guard rest.hasPrefix("0x") else { return nil }
        return Int(rest.dropFirst(2), radix: 16)
    }
}
