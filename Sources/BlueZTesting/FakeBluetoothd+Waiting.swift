import Waiting

// Waiting on the fake's state: a test says what it waits for, and every change of that state (a registration, a
// call to the app, a device, a counter) rings `changes`; a deadline only bounds the wait, so a failing test ends.
extension FakeBluetoothd {
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
        // One last look at the limit: the state may have changed in a way no property observer saw (the adapter's
        // lock).
        await changes.until(within: limit) { condition(self) } || condition(self)
    }

    /// Wakes every waiter to check its condition again.
    func stateChanged() { changes.changed() }
}
