/// An injected clock, type-erased to what the engine needs: time since it was wrapped, and a sleep until a moment.
///
/// The request deadlines (`DeadlineQueue`) and the emulation's schedules count time as a `Duration` since the
/// clock was wrapped, so whoever wraps it keeps the clock's own instant of origin here and converts both ways:
/// tests pass a manual clock (`PeripheralTesting.ManualClock`) and advance it, `blemu run` a `ContinuousClock`.
package struct ElapsedClock: Sendable {
    /// Time since the clock was wrapped.
    package let now: @Sendable () -> Duration
    /// Sleeps until that much time since the clock was wrapped; throws when the task is cancelled.
    package let sleepUntil: @Sendable (Duration) async throws -> Void

    /// Wraps `clock`, taking its present instant as the origin.
    package init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleepUntil = { try await clock.sleep(until: origin.advanced(by: $0), tolerance: nil) }
    }
}
