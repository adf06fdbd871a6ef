import Peripheral
import Testing

/// Level 1: the queue state machine alone, no backend, no clock.
@Suite struct NotificationQueueTests {
    let alice = Central(id: "alice", maximumUpdateValueLength: 20)
    let bob = Central(id: "bob", maximumUpdateValueLength: 20)

    /// Performs every action, answering each send with `outcome`, and returns what was asked.
    func drain(
        _ queue: inout NotificationQueue, outcome: (Central) -> String = { _ in "sent" }
    ) -> [NotificationQueue.Action] {
        var actions: [NotificationQueue.Action] = []
        while let action = queue.nextAction() {
            actions.append(action)
            if case .send(let central, _) = action {
                switch outcome(central) {
                case "sent": queue.sent(to: central)
                case "block": queue.wouldBlock(for: central)
                default: queue.failed(for: central, reason: "test")
                }
            }
        }
        return actions
    }

    @Test func aFullQueueRefusesTheUpdateAndQueuesNothing() {
        var queue = NotificationQueue(capacity: 2)
        #expect(queue.enqueue([1], characteristicID: "c", to: [(alice, false)]) == .enqueued(truncated: []))
        #expect(queue.enqueue([2], characteristicID: "c", to: [(alice, false)]) == .enqueued(truncated: []))
        #expect(queue.enqueue([3], characteristicID: "c", to: [(alice, false), (bob, false)]) == .full([alice]))
        #expect(queue.count(for: alice) == 2)
        #expect(queue.count(for: bob) == 0)
        #expect(queue.statistics.refusedFull == 1)
    }

    @Test func drainingAFullQueueSignalsReadyExactlyOnce() {
        var queue = NotificationQueue(capacity: 1)
        _ = queue.enqueue([1], characteristicID: "c", to: [(alice, false)])
        _ = queue.enqueue([2], characteristicID: "c", to: [(alice, false)])
        _ = queue.enqueue([3], characteristicID: "c", to: [(alice, false)])
        let actions = drain(&queue)
        #expect(actions.filter { $0 == .signalReady }.count == 1)
        #expect(actions.first == .signalReady)
        #expect(drain(&queue).isEmpty)
        #expect(queue.statistics.readySignals == 1)
    }

    @Test func noReadySignalIsOwedWhenNothingWasRefused() {
        var queue = NotificationQueue(capacity: 4)
        _ = queue.enqueue([1], characteristicID: "c", to: [(alice, false)])
        #expect(!drain(&queue).contains(.signalReady))
    }

    @Test func anIndicationWaitsForItsConfirmationBeforeTheNextUpdate() {
        var queue = NotificationQueue(capacity: 4)
        _ = queue.enqueue([1], characteristicID: "c", to: [(alice, true)])
        _ = queue.enqueue([2], characteristicID: "c", to: [(alice, true)])
        let first = drain(&queue)
        #expect(first == [.send(alice, .init(characteristicID: "c", bytes: [1], isIndication: true))])
        queue.confirmed(by: alice)
        let second = drain(&queue)
        #expect(second == [.send(alice, .init(characteristicID: "c", bytes: [2], isIndication: true))])
        queue.confirmed(by: alice)
        #expect(queue.statistics.confirmed == 2)
    }

    @Test func valuesLongerThanTheCentralsLimitAreCutToIt() {
        var queue = NotificationQueue(capacity: 4)
        let small = Central(id: "small", maximumUpdateValueLength: 3)
        let result = queue.enqueue([1, 2, 3, 4, 5], characteristicID: "c", to: [(small, false), (alice, false)])
        #expect(result == .enqueued(truncated: [small]))
        let sends = drain(&queue).compactMap { action -> [UInt8]? in
            if case .send(_, let update) = action { return update.bytes }
            return nil
        }
        #expect(sends.sorted { $0.count < $1.count } == [[1, 2, 3], [1, 2, 3, 4, 5]])
        #expect(queue.statistics.truncated == 1)
    }

    @Test func aBlockedCentralDoesNotHoldUpTheOthers() {
        var queue = NotificationQueue(capacity: 4)
        for value in 1...3 {
            _ = queue.enqueue([UInt8(value)], characteristicID: "c", to: [(alice, false), (bob, false)])
        }
        let actions = drain(&queue) { $0 == alice ? "block" : "sent" }
        let toBob = actions.filter { if case .send(bob, _) = $0 { true } else { false } }
        #expect(toBob.count == 3)
        #expect(queue.count(for: alice) == 3)
        queue.writable(alice)
        #expect(drain(&queue).count == 3)
        #expect(queue.statistics.sent == 6)
    }

    @Test func aWouldBlockKeepsTheOrderOfUpdates() {
        var queue = NotificationQueue(capacity: 4)
        for value in 1...3 { _ = queue.enqueue([UInt8(value)], characteristicID: "c", to: [(alice, false)]) }
        var blockedOnce = false
        let actions = drain(&queue) { _ in
            if !blockedOnce {
                blockedOnce = true
                return "block"
            }
            return "sent"
        }
        #expect(actions.count == 1)
        queue.writable(alice)
        let bytes = drain(&queue).compactMap { if case .send(_, let u) = $0 { u.bytes } else { nil } }
        #expect(bytes == [[1], [2], [3]])
    }

    @Test func disconnectingWithQueuedUpdatesDropsAndCountsThem() {
        var queue = NotificationQueue(capacity: 4)
        for value in 1...3 { _ = queue.enqueue([UInt8(value)], characteristicID: "c", to: [(alice, true)]) }
        _ = drain(&queue)  // the first indication is now waiting for its confirmation
        queue.disconnected(alice)
        #expect(drain(&queue) == [.drop(alice, count: 3, reason: .disconnected)])
        #expect(queue.statistics.dropped == 3)
        #expect(queue.statistics.enqueued == queue.statistics.dropped + queue.statistics.confirmed)
        #expect(!queue.isConnected(alice))
    }

    @Test func disconnectingTheFullCentralPaysTheReadySignal() {
        var queue = NotificationQueue(capacity: 1)
        _ = queue.enqueue([1], characteristicID: "c", to: [(alice, true)])
        _ = drain(&queue)
        _ = queue.enqueue([2], characteristicID: "c", to: [(alice, true)])
        #expect(queue.enqueue([3], characteristicID: "c", to: [(alice, true)]) == .full([alice]))
        queue.disconnected(alice)
        #expect(drain(&queue) == [.drop(alice, count: 2, reason: .disconnected), .signalReady])
    }

    @Test func aFailedSendIsDroppedWithItsReason() {
        var queue = NotificationQueue(capacity: 4)
        _ = queue.enqueue([1], characteristicID: "c", to: [(alice, false)])
        let actions = drain(&queue) { _ in "fail" }
        #expect(actions.last == .drop(alice, count: 1, reason: .sendFailed("test")))
        #expect(queue.statistics.dropped == 1)
    }

    @Test func unsubscribingDropsOnlyThatCharacteristicsUpdates() {
        var queue = NotificationQueue(capacity: 4)
        _ = queue.enqueue([1], characteristicID: "a", to: [(alice, false)])
        _ = queue.enqueue([2], characteristicID: "b", to: [(alice, false)])
        queue.unsubscribed(alice, from: "a")
        let actions = drain(&queue)
        #expect(actions.first == .drop(alice, count: 1, reason: .unsubscribed))
        #expect(actions.last == .send(alice, .init(characteristicID: "b", bytes: [2], isIndication: false)))
    }
}

extension NotificationQueueTests {
    @Test func aNewMTUFromTheStackWinsOverAnOldCopyOfTheCentral() {
        var queue = NotificationQueue(capacity: 4)
        let before = Central(id: "alice", attMTU: 23)
        queue.connected(before)
        queue.connected(Central(id: "alice", attMTU: 185))
        #expect(
            queue.enqueue(Array(repeating: 1, count: 100), characteristicID: "c", to: [(before, false)])
                == .enqueued(truncated: []))
    }
}
