import Testing

/// The gate's admission order, with no VM: what decides how the lab's last minutes are spent.
struct LabBootGateTests {
    /// The order in which bodies ran.
    actor Order {
        private(set) var names: [String] = []
        func append(_ name: String) { names.append(name) }
    }

    @Test func aLongBootQueuedAfterShortOnesIsAdmittedFirstAndAtMostWidthRunAtOnce() async throws {
        let gate = LabBootGate(width: 1)
        let order = Order()
        let (holding, hold) = AsyncStream<Void>.makeStream()
        let (entered, enter) = AsyncStream<Void>.makeStream()
        // The first boot takes the only slot and keeps it until `hold` finishes.
        let first = Task {
            try await gate.admitted(.short) {
                await order.append("first")
                enter.yield()
                for await _ in holding {}
            }
        }
        for await _ in entered { break }
        // Queued behind it, in this order: two short boots, then a long one. Each is enqueued before the next
        // starts (the gate is an actor; a task awaiting `admitted` has reached the queue once `queued` is 1 more).
        var waiting: [Task<Void, any Error>] = []
        for (name, length) in [("short-1", LabBootGate.Length.short), ("short-2", .short), ("long", .long)] {
            waiting.append(Task { try await gate.admitted(length) { await order.append(name) } })
            while await gate.queued < waiting.count { await Task.yield() }
        }
        #expect(await order.names == ["first"])
        hold.finish()
        try await first.value
        for task in waiting { try await task.value }
        #expect(await order.names == ["first", "long", "short-1", "short-2"])
    }
}
