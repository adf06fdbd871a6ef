import GATTModel
import Peripheral

/// A manager's events as a test awaits them: the one consumer of `PeripheralManager.events` keeps every event, and
/// a test suspends until the events so far satisfy a condition. The event itself wakes it (nothing polls); a time
/// limit ends the wait with false, so a missing event fails the test instead of hanging it.
actor ManagerEvents {
    private typealias Waiter = (
        condition: @Sendable ([PeripheralEvent]) -> Bool, continuation: CheckedContinuation<Bool, Never>
    )

    /// Every event so far, in order.
    private(set) var all: [PeripheralEvent] = []
    private var waiters: [Int: Waiter] = [:]
    private var nextWaiter = 0

    init(of manager: PeripheralManager) {
        let events = manager.events
        Task { await self.consume(events) }
    }

    /// Waits until `condition` holds for the events so far, for at most `limit`; false if it never did.
    func wait(
        within limit: Duration = .seconds(5), until condition: @escaping @Sendable ([PeripheralEvent]) -> Bool
    ) async -> Bool {
        if condition(all) { return true }
        let id = nextWaiter
        nextWaiter += 1
        let timer = Task {
            try? await Task.sleep(for: limit)
            self.expire(id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { waiters[id] = (condition, $0) }
    }

    /// Waits for the manager to report `state` as its latest state.
    func wait(for state: PeripheralManagerState) async -> Bool {
        await wait { Self.latestState(in: $0) == state }
    }

    /// Waits until the subscriptions to `characteristic` reported so far (subscribed minus unsubscribed) are `count`.
    func wait(forSubscribers count: Int, of characteristic: Characteristic) async -> Bool {
        await wait { Self.subscribers(of: characteristic, in: $0) == count }
    }

    /// Waits until `count` events match `matches`.
    func wait(forCount count: Int, of matches: @escaping @Sendable (PeripheralEvent) -> Bool) async -> Bool {
        await wait { $0.count(where: matches) >= count }
    }

    /// The state of the latest `stateChanged` among `events`.
    static func latestState(in events: [PeripheralEvent]) -> PeripheralManagerState? {
        for event in events.reversed() { if case .stateChanged(let state) = event { return state } }
        return nil
    }

    /// Subscriptions to `characteristic` among `events`: subscribed minus unsubscribed.
    static func subscribers(of characteristic: Characteristic, in events: [PeripheralEvent]) -> Int {
        events.reduce(0) { count, event in
            switch event {
            case .subscribed(_, let subscribed) where subscribed.id == characteristic.id: count + 1
            case .unsubscribed(_, let unsubscribed) where unsubscribed.id == characteristic.id: count - 1
            default: count
            }
        }
    }

    private func consume(_ events: AsyncStream<PeripheralEvent>) async {
        for await event in events {
            all.append(event)
            for (id, waiter) in waiters where waiter.condition(all) {
                waiters[id] = nil
                waiter.continuation.resume(returning: true)
            }
        }
    }

    private func expire(_ id: Int) {
        waiters.removeValue(forKey: id)?.continuation.resume(returning: false)
    }
}
