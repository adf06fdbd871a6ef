import Foundation

@testable import Lab

/// The ATT PDUs in btmon's binary capture (`btmon -w`, btmon.snoop), with the controller that carried each one and
/// its direction, so a lab test can count what really went over the air: requests received and answers sent.
///
/// The capture, not btmon's text: btmon 5.87's text output left out packets the capture holds (an Execute Write
/// Request received on hci0, seen in the ATT scenario; its frame numbers run on without it), and its lines changed
/// form (`> LE-ACL:`, a process before the direction mark). The capture is whole on every version.
struct BtmonTrace {
    /// One ATT PDU.
    struct PDU: Equatable {
        /// `hci0`, `hci1`...
        var controller: String
        /// True for ACL data the controller received, false for data its host sent.
        var isReceived: Bool
        var opcode: UInt8
        /// The attribute handle the PDU names, where it names one (Core Spec Vol 3, Part F, 3.4).
        var handle: Int?
        /// The value offset (Read Blob, Prepare Write), where the PDU has one.
        var offset: Int?
        /// For an Error Response: the request it refuses and its error code.
        var refusedOpcode: UInt8?
        var errorCode: UInt8?
    }

    /// ATT request opcodes (Core Spec Vol 3, Part F, 3.4.8): each is answered by `opcode + 1` or Error Response.
    static let requestOpcodes: Set<UInt8> = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20]
    static let errorResponse: UInt8 = 0x01

    /// Every ATT PDU, in the capture's order.
    let pdus: [PDU]
    /// For each PDU index, how many Disconnect Complete events each controller logged before it (and, at
    /// `pdus.count`, in all): lets `requestsAndAnswers` tell a request whose link went down from one left unanswered.
    private let disconnectsBefore: [[String: Int]]

    /// The ATT PDUs of `capture`: the first fragment of each ACL packet on the ATT channel (L2CAP CID 4), and the
    /// Disconnect Complete events (0x05) between them.
    init(_ capture: BTSnoop?) {
        var pdus: [PDU] = []
        var disconnects: [String: Int] = [:]
        var disconnectsBefore: [[String: Int]] = []
        for packet in capture?.packets ?? [] {
            let controller = "hci\(packet.index)"
            let bytes = packet.bytes
            if packet.opcode == BTSnoop.eventPacket, bytes.first == 0x05 {
                disconnects[controller, default: 0] += 1
                continue
            }
            // ACL: handle and flags (2), data length (2), then L2CAP: length (2), channel (2), payload. A packet
            // whose boundary flag says "continuing fragment" (0b01) holds no L2CAP header.
            guard packet.opcode == BTSnoop.aclSent || packet.opcode == BTSnoop.aclReceived, bytes.count >= 9,
                (bytes[1] >> 4) & 0x3 != 0x1, Int(bytes[6]) | Int(bytes[7]) << 8 == 4
            else { continue }
            let att = Array(bytes[8...])
            pdus.append(Self.pdu(att, controller: controller, isReceived: packet.opcode == BTSnoop.aclReceived))
            disconnectsBefore.append(disconnects)
        }
        disconnectsBefore.append(disconnects)
        self.pdus = pdus
        self.disconnectsBefore = disconnectsBefore
    }

    /// The capture at `path` (a run's btmon.snoop); no PDU when it cannot be read.
    init(capture path: String) {
        let bytes = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
        self.init(try? BTSnoop(bytes))
    }

    /// One ATT PDU's fields, by its opcode's layout (Core Spec Vol 3, Part F, 3.4).
    private static func pdu(_ att: [UInt8], controller: String, isReceived: Bool) -> PDU {
        func uint16(_ offset: Int) -> Int? {
            att.count >= offset + 2 ? Int(att[offset]) | Int(att[offset + 1]) << 8 : nil
        }
        var pdu = PDU(controller: controller, isReceived: isReceived, opcode: att[0])
        switch att[0] {
        case errorResponse:
            pdu.refusedOpcode = att.count > 1 ? att[1] : nil
            pdu.handle = uint16(2)
            pdu.errorCode = att.count > 4 ? att[4] : nil
        case 0x0A, 0x12, 0x52, 0x1B, 0x1D:  // Read, Write, Write Command, Notification, Indication
            pdu.handle = uint16(1)
        case 0x0C, 0x16, 0x17:  // Read Blob, Prepare Write Request and Response
            pdu.handle = uint16(1)
            pdu.offset = uint16(3)
        default:
            break
        }
        return pdu
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
}
