/// RootCanal's packets on their way to the guest's kernel: two changes so that Linux and bluetoothd meet it as they
/// meet a controller on a radio, and in order always.
///
/// - **LE Ping is cleared** from the features LE Read Local Supported Features reports (Core Specification 5.4,
///   Vol 6, Part B, §4.6, bit 4). Linux sends Write Authenticated Payload Timeout after every LE encryption to a
///   controller that has it (net/bluetooth/hci_event.c `hci_encrypt_change_evt`), and RootCanal 1.10.0 aborted on
///   that command ("Unimplemented command WRITE_AUTHENTICATED_PAYLOAD_TIMEOUT"), taking the whole air with it: every
///   pairing would end the run. RootCanal's newer source still has that command's handler commented out and ends a
///   supported command without one with FATAL (model/controller/dual_mode_controller.cc), so the bit stays cleared.
/// - **LE Read Remote Features Complete waits** `remoteFeaturesHold`, and every packet after it waits behind it.
///   RootCanal answers in 3 to 11 ms; bluetoothd then sees the ATT channel before mgmt's Device Connected, says
///   "already connected", and a central's `Device1.Connected` never turns true (bleak then fails to discover
///   services). A controller on a radio takes tens of milliseconds over the air; the lab's btvirt is patched the same
///   way (scripts/btvirt-ll-timing.patch, docs/lab.md "The radio").
struct ControllerStream: Sendable {
    /// How long LE Read Remote Features Complete is held: the lab's btvirt patch's figure.
    static let remoteFeaturesHold: Duration = .milliseconds(200)

    private var queue: [(packet: [UInt8], due: ContinuousClock.Instant)] = []
    /// How many feature reports had LE Ping cleared.
    private(set) var pingsCleared = 0
    /// How many LE Read Remote Features Complete events were held.
    private(set) var featuresHeld = 0

    /// An empty stream.
    init() {}

    /// Takes one whole packet (indicator first) as RootCanal sent it at `now`.
    mutating func received(_ packet: [UInt8], at now: ContinuousClock.Instant) {
        var packet = packet
        if Self.clearLEPing(in: &packet) { pingsCleared += 1 }
        // Behind whatever is still held: the kernel must see the stream in RootCanal's order.
        var due = max(now, queue.last?.due ?? now)
        if Self.isRemoteFeaturesComplete(packet) {
            featuresHeld += 1
            due = max(due, now + Self.remoteFeaturesHold)
        }
        queue.append((packet, due))
    }

    /// The packets to send at `now`, in order; the rest stay queued.
    mutating func due(at now: ContinuousClock.Instant) -> [[UInt8]] {
        let ready = queue.prefix { $0.due <= now }.map(\.packet)
        queue.removeFirst(ready.count)
        return ready
    }

    /// When the next queued packet is due; nil when none is queued.
    var nextDue: ContinuousClock.Instant? { queue.first?.due }

    /// Clears LE Ping in a successful Command Complete of LE Read Local Supported Features (opcode 0x2003, Vol 4,
    /// Part E, §7.8.3); true when it was set.
    static func clearLEPing(in packet: inout [UInt8]) -> Bool {
        // 04 0E len | ncmd | 03 20 | status | features[8]
        guard packet.count >= 15, packet[0] == 0x04, packet[1] == 0x0E, packet[4] == 0x03, packet[5] == 0x20,
            packet[6] == 0x00, packet[7] & 0x10 != 0
        else { return false }
        packet[7] &= ~0x10
        return true
    }

    /// True for an LE Meta event with subevent LE Read Remote Features Complete (0x3E, 0x04: Vol 4, Part E,
    /// §7.7.65.4).
    static func isRemoteFeaturesComplete(_ packet: [UInt8]) -> Bool {
        packet.count >= 4 && packet[0] == 0x04 && packet[1] == 0x3E && packet[3] == 0x04
    }
}
