import GATTModel
import Peripheral

/// The updates waiting for the notification queue to have room again (Core Bluetooth's "not now": `updateValue`
/// returned false), in the order they were asked for, and bounded: a central that stops reading, or a script that
/// asks for more than it can take, holds at most `capacity` updates here, never memory without end.
///
/// A value sent several times is one entry with a count, so a burst costs one entry however long; a transfer is one
/// entry (and one update) however many chunks it streams. A value type with no I/O: `Emulator.pump` sends what it
/// shows first.
struct Outbox: Sendable {
    /// One thing waiting.
    enum Entry: Sendable {
        /// `value`, `times` more times, to every subscriber or to one central.
        case value(Characteristic, [UInt8], to: Central?, times: Int)
        /// A transfer's chunks to one central (`TransferChunker` knows which is next).
        case transfer(Characteristic, Central, TransferChunker)

        /// The characteristic it updates.
        var characteristic: Characteristic {
            switch self {
            case .value(let characteristic, _, _, _), .transfer(let characteristic, _, _): characteristic
            }
        }

        /// How many updates it counts for against the capacity.
        var updates: Int {
            switch self {
            case .value(_, _, _, let times): times
            case .transfer: 1
            }
        }
    }

    /// The most updates that may wait.
    let capacity: Int
    /// The entries with their serial numbers, the first at `head` (a FIFO that pops without moving the rest, as
    /// `NotificationQueue`'s links).
    private var entries: [(serial: Int, entry: Entry)] = []
    private var head = 0
    private var nextSerial = 0
    /// Updates waiting now (each entry's `updates`, summed as they change).
    private(set) var updates = 0

    /// An empty outbox holding at most `capacity` updates.
    init(capacity: Int) { self.capacity = capacity }

    /// The entry to send from now, if any, and its serial number: the sender names it when it reports back, since
    /// the outbox may change while the sender awaits the queue (a transfer whose central left is removed).
    var first: (serial: Int, entry: Entry)? { head < entries.count ? entries[head] : nil }

    /// Whether `count` more updates fit.
    func fits(_ count: Int) -> Bool { count <= capacity - updates }

    /// Queues `entry` behind the others; false, changing nothing, when its updates do not fit.
    mutating func append(_ entry: Entry) -> Bool {
        guard entry.updates > 0, fits(entry.updates) else { return false }
        entries.append((nextSerial, entry))
        nextSerial += 1
        updates += entry.updates
        return true
    }

    /// Entry `serial`, a value, went out once: its count drops, and it leaves at zero. Nothing when it is no longer
    /// first.
    mutating func sentValue(_ serial: Int) {
        guard let first, first.serial == serial,
            case .value(let characteristic, let value, let central, let times) =
                first.entry
        else { return }
        updates -= 1
        if times > 1 {
            entries[head].entry = .value(characteristic, value, to: central, times: times - 1)
        } else {
            popFirst()
        }
    }

    /// Entry `serial`, a transfer, stopped at `chunker`'s chunk: it stays first with what is left.
    mutating func transferWaits(_ serial: Int, at chunker: TransferChunker) {
        guard let first, first.serial == serial, case .transfer(let characteristic, let central, _) = first.entry
        else { return }
        entries[head].entry = .transfer(characteristic, central, chunker)
    }

    /// Entry `serial`, a transfer, sent its last chunk: it leaves.
    mutating func transferDone(_ serial: Int) {
        guard let first, first.serial == serial, case .transfer = first.entry else { return }
        updates -= 1
        popFirst()
    }

    /// Entry `serial` is for one central, which is no longer subscribed: the rest of it goes nowhere, and it leaves.
    mutating func centralLeft(_ serial: Int) {
        guard let first, first.serial == serial else { return }
        updates -= first.entry.updates
        popFirst()
    }

    /// Removes every entry `matches` names, keeping the others in order.
    mutating func removeAll(where matches: (Entry) -> Bool) {
        let kept = entries[head...].filter { !matches($0.entry) }
        entries = Array(kept)
        head = 0
        updates = kept.reduce(0) { $0 + $1.entry.updates }
    }

    private mutating func popFirst() {
        head += 1
        // Compact now and then, so a long-lived outbox does not keep every entry it ever sent.
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}
