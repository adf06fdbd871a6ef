/// The injected clock, type-erased to what the emulator needs: time since launch and a sleep until a moment.
///
/// The engines count time as `Duration` since `start(at:)`, so the emulator keeps the clock's own instant of
/// launch here and converts both ways; tests pass a manual clock, `blemu run` a `ContinuousClock`.
struct EmulationClock: Sendable {
    /// Time since the clock was wrapped.
    let now: @Sendable () -> Duration
    /// Sleeps until that much time since the clock was wrapped; throws when the task is cancelled.
    let sleepUntil: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleepUntil = { try await clock.sleep(until: origin.advanced(by: $0), tolerance: nil) }
    }
}
