/// The bounded per-central queues behind `updateValue(_:for:onSubscribedCentrals:)`: a state machine with no I/O
/// and no clock. Feed it events (`enqueue`, `sent`, `wouldBlock`, `writable`, `confirmed`, `failed`,
/// `disconnected`), then perform what `nextAction()` returns until it returns nil.
///
/// bluetoothd's own ATT send queue is unbounded (src/shared/att.c: `bt_att_send` queues without a bound), so Core
/// Bluetooth's "queue full" and "ready to update subscribers" must come from here. One update is in flight per
/// central at a time; an indication stays in flight until the central confirms it (Core Spec Vol 3, Part F, 3.4.7.2).
///
/// The machine is the manager's (package access); what it hands out is public: `Update` (what a central receives),
/// `NotificationCounts` (`PeripheralManager.notificationCounts`) and `DropReason` (`PeripheralEvent.updatesDropped`).
public struct NotificationQueue: Sendable {
    /// One value for one central, already cut to the central's limit.
    public struct Update: Hashable, Sendable {
        /// The characteristic whose value this is.
        public var characteristicID: String
        /// The bytes to send.
        public var bytes: [UInt8]
        /// Whether the central must confirm it (indication) or not (notification).
        public var isIndication: Bool

        /// An update from its parts.
        public init(characteristicID: String, bytes: [UInt8], isIndication: Bool) {
            self.characteristicID = characteristicID
            self.bytes = bytes
            self.isIndication = isIndication
        }
    }

    /// Something the owner of the queue must do.
    package enum Action: Hashable, Sendable {
        /// Hand this update to the stack for this central, then report `sent`, `wouldBlock` or `failed`.
        case send(Central, Update)
        /// Tell the application it may retry: every queue that was full when `enqueue` said so has room again.
        case signalReady
        /// Updates were discarded (already counted in `statistics`): log them.
        case drop(Central, count: Int, reason: DropReason)
    }

    /// Why queued updates were discarded.
    public enum DropReason: Hashable, Sendable, CustomStringConvertible {
        /// The central disconnected with updates still queued or unconfirmed.
        case disconnected
        /// The central unsubscribed from the characteristic with updates still queued.
        case unsubscribed
        /// The stack refused the update (e.g. a closed notification socket).
        case sendFailed(String)

        /// A short phrase for logs.
        public var description: String {
            switch self {
            case .disconnected: "central disconnected"
            case .unsubscribed: "central unsubscribed"
            case .sendFailed(let reason): "send failed: \(reason)"
            }
        }
    }

    /// What `enqueue` did.
    package enum EnqueueResult: Hashable, Sendable {
        /// Every target got the update; `truncated` lists the centrals whose copy was cut to their limit.
        case enqueued(truncated: [Central])
        /// Nothing was queued because these targets' queues are full; `signalReady` follows when they have room.
        case full([Central])
    }

    /// Where a central's link stands: at most one update is out at a time, so one value says which.
    private enum Stage: Sendable {
        /// Nothing out: `nextAction` may hand out the next update.
        case idle
        /// Handed out by `nextAction` and not yet reported back (`sent`, `wouldBlock`, `failed`).
        case inFlight(Update)
        /// An indication the stack sent and the central has not confirmed.
        case awaitingConfirmation(Update)
        /// The stack said "would block" (the update went back to the head of the queue): wait for `writable`.
        case blocked
    }

    /// One central's queue. A FIFO with a head index rather than swift-collections' `Deque`: it also needs
    /// `pushFront` and an in-place filter, both a line here, and the package does not depend on swift-collections.
    private struct Link: Sendable {
        var central: Central
        var queued: [Update] = []
        var head = 0
        var stage = Stage.idle

        /// The update out and not yet settled (in flight or unconfirmed), if any: lost if the link drops.
        var outstanding: Update? {
            switch stage {
            case .inFlight(let update), .awaitingConfirmation(let update): update
            case .idle, .blocked: nil
            }
        }

        /// The update handed out by `nextAction`, if it has not been reported back yet.
        var inFlight: Update? {
            if case .inFlight(let update) = stage { update } else { nil }
        }

        var count: Int { queued.count - head }
        var isIdle: Bool { if case .idle = stage { true } else { false } }

        mutating func popFirst() -> Update? {
            guard head < queued.count else { return nil }
            let update = queued[head]
            head += 1
            // Compact now and then so that a long-lived link does not keep every value it ever sent.
            if head > 64 && head * 2 > queued.count {
                queued.removeFirst(head)
                head = 0
            }
            return update
        }

        mutating func pushFront(_ update: Update) {
            if head > 0 {
                head -= 1
                queued[head] = update
            } else {
                queued.insert(update, at: 0)
            }
        }
    }

    /// The most updates one central may have waiting (not counting the one in flight).
    package let capacity: Int
    /// The counters.
    package private(set) var statistics = NotificationCounts()

    private var links: [String: Link] = [:]
    /// Central ids in connection order, for round-robin sending.
    private var order: [String] = []
    private var cursor = 0
    /// Centrals whose full queue made `enqueue` fail; `signalReady` is owed once all have room.
    private var waitingForRoom: Set<String> = []
    private var isReadyOwed = false
    private var pending: [Action] = []

    /// An empty queue; a capacity below 1 is raised to 1, since a queue that can hold nothing can never drain.
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// The number of updates waiting for a central (not counting the one in flight); 0 for an unknown central.
    package func count(for central: Central) -> Int { links[central.id]?.count ?? 0 }

    /// Whether the central is known to the queue.
    package func isConnected(_ central: Central) -> Bool { links[central.id] != nil }

    /// A central connected, or its MTU changed: later updates are cut to its new limit.
    package mutating func connected(_ central: Central) {
        if links[central.id] == nil {
            links[central.id] = Link(central: central)
            order.append(central.id)
        } else {
            links[central.id]?.central = central
        }
    }

    /// Queues one value for each target, all or nothing: when any target's queue is full, nothing is queued
    /// (so that the application's retry after `signalReady` does not send duplicates to the others).
    /// Targets the queue does not know are connected first with their own limit; for known ones the limit from the
    /// latest `connected` counts (a subscription's copy of a central may predate an MTU exchange).
    package mutating func enqueue(
        _ bytes: [UInt8], characteristicID: String, to targets: [(central: Central, isIndication: Bool)]
    ) -> EnqueueResult {
        for target in targets where links[target.central.id] == nil { connected(target.central) }
        let full = targets.map(\.central).filter { (links[$0.id]?.count ?? 0) >= capacity }
        if !full.isEmpty {
            statistics.refusedFull += 1
            waitingForRoom.formUnion(full.map(\.id))
            isReadyOwed = true
            return .full(full)
        }
        var truncated: [Central] = []
        for target in targets {
            guard let link = links[target.central.id] else { continue }
            let limit = link.central.maximumUpdateValueLength
            var copy = bytes
            if copy.count > limit {
                // Core Bluetooth cuts too: the central reads the whole value with a long read.
                copy.removeLast(copy.count - limit)
                truncated.append(link.central)
                statistics.truncated += 1
            }
            links[target.central.id]?.queued.append(
                Update(characteristicID: characteristicID, bytes: copy, isIndication: target.isIndication))
            statistics.enqueued += 1
        }
        return .enqueued(truncated: truncated)
    }

    /// The stack accepted the update `nextAction` handed out for this central.
    package mutating func sent(to central: Central) {
        guard let update = links[central.id]?.inFlight else { return }
        statistics.sent += 1
        links[central.id]?.stage = update.isIndication ? .awaitingConfirmation(update) : .idle
        noteRoom(for: central.id)
    }

    /// The stack could not take the update now (e.g. a full notification socket): it goes back to the head of
    /// the queue until `writable`.
    package mutating func wouldBlock(for central: Central) {
        guard let update = links[central.id]?.inFlight else { return }
        links[central.id]?.pushFront(update)
        links[central.id]?.stage = .blocked
    }

    /// The stack can take updates for this central again.
    package mutating func writable(_ central: Central) {
        guard case .blocked? = links[central.id]?.stage else { return }
        links[central.id]?.stage = .idle
    }

    /// The central confirmed the indication in flight; unexpected confirmations are ignored.
    package mutating func confirmed(by central: Central) {
        guard case .awaitingConfirmation? = links[central.id]?.stage else { return }
        links[central.id]?.stage = .idle
        statistics.confirmed += 1
    }

    /// The stack refused the update in flight for good: it is dropped and counted.
    package mutating func failed(for central: Central, reason: String) {
        guard let link = links[central.id], link.inFlight != nil else { return }
        links[central.id]?.stage = .idle
        drop(count: 1, of: link.central, reason: .sendFailed(reason))
        noteRoom(for: central.id)
    }

    /// The central unsubscribed from a characteristic: its queued updates for it are dropped and counted.
    package mutating func unsubscribed(_ central: Central, from characteristicID: String) {
        guard var link = links[central.id] else { return }
        let before = link.count
        let remaining = link.queued[link.head...].filter { $0.characteristicID != characteristicID }
        link.queued = Array(remaining)
        link.head = 0
        if case .awaitingConfirmation(let update) = link.stage, update.characteristicID == characteristicID {
            link.stage = .idle
        }
        links[central.id] = link
        if before > link.count { drop(count: before - link.count, of: link.central, reason: .unsubscribed) }
        noteRoom(for: central.id)
    }

    /// The central disconnected: everything queued, in flight or unconfirmed for it is dropped and counted.
    package mutating func disconnected(_ central: Central) {
        guard let link = links.removeValue(forKey: central.id) else { return }
        order.removeAll { $0 == central.id }
        let lost = link.count + (link.outstanding == nil ? 0 : 1)
        if lost > 0 { drop(count: lost, of: link.central, reason: .disconnected) }
        waitingForRoom.remove(central.id)
        signalIfRoom()
    }

    /// The next thing to do, or nil when there is nothing to do until the next event.
    package mutating func nextAction() -> Action? {
        if !pending.isEmpty { return pending.removeFirst() }
        guard !order.isEmpty else { return nil }
        for step in 0..<order.count {
            let id = order[(cursor + step) % order.count]
            guard var link = links[id], link.isIdle, let update = link.popFirst() else { continue }
            link.stage = .inFlight(update)
            links[id] = link
            cursor = (cursor + step + 1) % order.count
            noteRoom(for: id)
            if !pending.isEmpty {
                // Room just opened: signal it before the send, so the application's retry overlaps the I/O.
                pending.append(.send(link.central, update))
                return pending.removeFirst()
            }
            return .send(link.central, update)
        }
        return nil
    }

    private mutating func drop(count: Int, of central: Central, reason: DropReason) {
        statistics.dropped += count
        pending.append(.drop(central, count: count, reason: reason))
    }

    private mutating func noteRoom(for id: String) {
        if waitingForRoom.contains(id), (links[id]?.count ?? 0) < capacity { waitingForRoom.remove(id) }
        signalIfRoom()
    }

    private mutating func signalIfRoom() {
        guard isReadyOwed, waitingForRoom.isEmpty else { return }
        isReadyOwed = false
        statistics.readySignals += 1
        pending.append(.signalReady)
    }
}
