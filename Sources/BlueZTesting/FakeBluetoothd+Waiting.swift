// Waiting on the fake's state: a test says what it waits for, and every change of that state (a registration, a
// call to the app, a device, a counter) asks again; a timer only bounds the wait, so a failing test ends.
extension FakeBluetoothd {
    /// A test's condition and how to wake it.
    struct Waiter {
        let condition: @Sendable (isolated FakeBluetoothd) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
        let timeout: Task<Void, Never>
    }

    /// Returns true as soon as `condition` holds (at once if it holds now), checked again after each change of the
    /// fake's state; false when `limit` passes first. For what the fake itself knows: its registrations,
    /// advertisements, agent, devices, notify and write sockets, and its counters.
    ///
    /// ```swift
    /// #expect(await fake.until { $0.advertisementsOnAir == 1 })
    /// ```
    public func until(
        within limit: Duration = .seconds(10), _ condition: @escaping @Sendable (isolated FakeBluetoothd) -> Bool
    ) async -> Bool {
        if condition(self) { return true }
        let id = nextWaiter
        nextWaiter += 1
        return await withCheckedContinuation { continuation in
            let timeout = Task { [weak self] in
                try? await Task.sleep(for: limit)
                await self?.expire(id)
            }
            waiters[id] = Waiter(condition: condition, continuation: continuation, timeout: timeout)
        }
    }

    /// Wakes every waiter whose condition holds now.
    func stateChanged() {
        guard !waiters.isEmpty else { return }
        for (id, waiter) in waiters where waiter.condition(self) {
            waiters[id] = nil
            waiter.timeout.cancel()
            waiter.continuation.resume(returning: true)
        }
    }

    private func expire(_ id: Int) {
        guard let waiter = waiters.removeValue(forKey: id) else { return }
        // One last look: the state may have changed in a way no property observer saw (the adapter's lock).
        waiter.continuation.resume(returning: waiter.condition(self))
    }
}
