import Foundation

@testable import Lab

/// The ATT PDUs in btmon's binary capture (`btmon -w`, btmon.snoop), with the controller that carried each one and
/// its direction, so a lab test can count what really went over the air: requests received and answers sent.
///
/// The capture, not btmon's text: btmon 5.87's text output left out packets the capture holds (an Execute Write
/// Request received on hci0, seen in the ATT scenario; its frame numbers run on without it), and its lines changed
/// form (`> LE-ACL:`, a process before the direction mark).
///
/// The capture can lose records too. The kernel gives each monitor socket its own copy of every packet and frees
/// the copy when that socket's receive queue is full (net/bluetooth/hci_sock.c, hci_send_to_monitor): nothing
/// marks the loss. On 5.87 the ATT scenario's capture lost hci0's Write Response and the Read Request it received
/// next, in a burst of bluetoothd debug log records (it was exporting a connection's GATT objects): bluetoothd
/// logged handling both, and btmon's text holds the Write Response. `requestsAndAnswers` pairs each answer with the
/// request open on its bearer, so a record the ATT rule proves sent is counted (`missing` lists it) instead of the
/// next answer being taken for it.
struct BtmonTrace {
    /// One ATT PDU.
    struct PDU: Equatable {
        /// `hci0`, `hci1`...
        var controller: String
        /// The ACL connection handle: which of the controller's links carried it (Core Spec Vol 4, Part E, 5.4.2).
        var connection: Int
        /// The L2CAP channel: 4, LE's fixed ATT channel (Core Spec Vol 3, Part A, 2.1). bluetoothd opens no EATT
        /// channel in the lab (main.conf `[GATT] Channels = 1`, `GuestStack.mainConf`).
        var channel: Int
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
    /// The Disconnect Complete events between the PDUs: lets `requestsAndAnswers` tell a request whose link went
    /// down from one left unanswered.
    private let disconnects: [Disconnect]

    /// A link that went down: `connection` of `controller`, before `pdus[before]` (at `pdus.count`: after all).
    private struct Disconnect {
        var before: Int
        var controller: String
        var connection: Int
    }

    /// The ATT PDUs of `capture`: the first fragment of each ACL packet on the ATT channel (L2CAP CID 4), and the
    /// Disconnect Complete events (0x05) between them.
    init(_ capture: BTSnoop?) {
        var pdus: [PDU] = []
        var disconnects: [Disconnect] = []
        for packet in capture?.packets ?? [] {
            let controller = "hci\(packet.index)"
            let bytes = packet.bytes
            // Disconnect Complete: code, length, status, handle (2), reason; status 0 when the link is down (Core
            // Spec Vol 4, Part E, 7.7.5).
            if packet.opcode == BTSnoop.eventPacket, bytes.first == 0x05 {
                if bytes.count >= 5, bytes[2] == 0 {
                    disconnects.append(
                        Disconnect(
                            before: pdus.count, controller: controller,
                            connection: (Int(bytes[3]) | Int(bytes[4]) << 8) & 0xFFF))
                }
                continue
            }
            // ACL: handle and flags (2), data length (2), then L2CAP: length (2), channel (2), payload. A packet
            // whose boundary flag says "continuing fragment" (0b01) holds no L2CAP header.
            guard packet.opcode == BTSnoop.aclSent || packet.opcode == BTSnoop.aclReceived, bytes.count >= 9,
                (bytes[1] >> 4) & 0x3 != 0x1, Int(bytes[6]) | Int(bytes[7]) << 8 == 4
            else { continue }
            pdus.append(
                Self.pdu(
                    Array(bytes[8...]), controller: controller,
                    connection: (Int(bytes[0]) | Int(bytes[1]) << 8) & 0xFFF,
                    isReceived: packet.opcode == BTSnoop.aclReceived))
        }
        self.pdus = pdus
        self.disconnects = disconnects
    }

    /// The capture at `path` (a run's btmon.snoop); no PDU when it cannot be read.
    init(capture path: String) {
        let bytes = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
        self.init(try? BTSnoop(bytes))
    }

    /// One ATT PDU's fields, by its opcode's layout (Core Spec Vol 3, Part F, 3.4).
    private static func pdu(_ att: [UInt8], controller: String, connection: Int, isReceived: Bool) -> PDU {
        func uint16(_ offset: Int) -> Int? {
            att.count >= offset + 2 ? Int(att[offset]) | Int(att[offset + 1]) << 8 : nil
        }
        var pdu = PDU(
            controller: controller, connection: connection, channel: 4, isReceived: isReceived, opcode: att[0])
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
    /// bearer (Core Spec Vol 3, Part F, 3.3.2), so a request still open when its link's Disconnect Complete comes
    /// can never be answered. Records the capture lost but the same rule proves sent are counted (`missing`).
    func requestsAndAnswers(
        on controller: String
    ) -> (requests: [UInt8: Int], answers: [UInt8: Int], cutOff: [UInt8: Int]) {
        let pairing = pair(on: controller)
        return (pairing.requests, pairing.answers, pairing.cutOff)
    }

    /// The records of `controller`'s server side that the capture lacks but the ATT rule proves went over the link,
    /// in the order the PDUs proving them came; `requestsAndAnswers` counts them.
    func missing(on controller: String) -> [Missing] { pair(on: controller).missing }

    /// A request the server received, or an answer it sent, that is not in the capture.
    struct Missing: Hashable, CustomStringConvertible {
        /// True for the request, false for its answer.
        var isRequest: Bool
        /// The request's opcode (for an answer: the request it answers).
        var opcode: UInt8
        /// The bearer: the ACL connection and L2CAP channel.
        var connection: Int
        var channel: Int
        /// The index in `pdus` of the PDU that proves it.
        var provedBy: Int
        var description: String {
            (isRequest ? "request " : "answer to ")
                + String(
                    format: "0x%02x, connection 0x%04x channel 0x%04x, shown by PDU %d", opcode, connection, channel,
                    provedBy)
        }
    }

    /// An ATT bearer of one controller: a link and an L2CAP channel on it.
    private struct Bearer: Hashable {
        var connection: Int
        var channel: Int
    }

    /// What `requestsAndAnswers` and `missing` report.
    private struct Pairing {
        var requests: [UInt8: Int] = [:]
        var answers: [UInt8: Int] = [:]
        var cutOff: [UInt8: Int] = [:]
        var missing: [Missing] = []
    }

    /// Pairs each answer `controller` sent with the request open on the same bearer: the same link (connection
    /// handle) and L2CAP channel, a server having at most one request open on each (Core Spec Vol 3, Part F, 3.3.2;
    /// each EATT bearer is an L2CAP channel of its own). Only the server's side: requests received, answers sent;
    /// the requests the controller's host sends as a client, and their answers, are a transaction stream of their
    /// own on the same bearer.
    ///
    /// A client sends no request on a bearer before the previous one is answered, and a server answers only a request
    /// it received; so where the capture shows otherwise, it lost records (see the type's comment):
    /// - a request received while another is open on its bearer: the open one's answer went out before it;
    /// - an answer for a request other than the open one (Read Response with a Write Request open): the open
    ///   request's answer went out, and the request this answer is for came in, both unseen.
    /// An answer with no request open on its bearer stays a surplus answer: it may be a second answer to a request,
    /// which is what the ATT scenario looks for.
    private func pair(on controller: String) -> Pairing {
        var pairing = Pairing()
        // The open request's opcode, per bearer.
        var open: [Bearer: UInt8] = [:]
        var pendingDisconnects = disconnects.filter { $0.controller == controller }[...]
        func closeLinks(before index: Int) {
            while let down = pendingDisconnects.first, down.before <= index {
                pendingDisconnects.removeFirst()
                for (bearer, opcode) in open where bearer.connection == down.connection {
                    pairing.cutOff[opcode, default: 0] += 1
                    open[bearer] = nil
                }
            }
        }
        for (index, pdu) in pdus.enumerated() where pdu.controller == controller {
            closeLinks(before: index)
            let bearer = Bearer(connection: pdu.connection, channel: pdu.channel)
            func unseen(isRequest: Bool, _ opcode: UInt8) {
                pairing.missing.append(
                    Missing(
                        isRequest: isRequest, opcode: opcode, connection: pdu.connection, channel: pdu.channel,
                        provedBy: index))
                if isRequest {
                    pairing.requests[opcode, default: 0] += 1
                } else {
                    pairing.answers[opcode, default: 0] += 1
                }
            }
            if pdu.isReceived, Self.requestOpcodes.contains(pdu.opcode) {
                if let previous = open[bearer] { unseen(isRequest: false, previous) }
                pairing.requests[pdu.opcode, default: 0] += 1
                open[bearer] = pdu.opcode
            } else if !pdu.isReceived, let request = Self.requestAnswered(by: pdu) {
                if let previous = open.removeValue(forKey: bearer), previous != request {
                    unseen(isRequest: false, previous)
                    unseen(isRequest: true, request)
                }
                pairing.answers[request, default: 0] += 1
            }
        }
        closeLinks(before: pdus.count)
        return pairing
    }

    /// The request `pdu` answers, if it is an answer: an Error Response names it (Core Spec Vol 3, Part F, 3.4.1.1),
    /// a response is its request's opcode plus one (3.4.8).
    private static func requestAnswered(by pdu: PDU) -> UInt8? {
        if pdu.opcode == errorResponse {
            return pdu.refusedOpcode.flatMap { requestOpcodes.contains($0) ? $0 : nil }
        }
        return requestOpcodes.contains(pdu.opcode &- 1) ? pdu.opcode &- 1 : nil
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
