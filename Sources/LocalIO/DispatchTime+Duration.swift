import Dispatch

extension DispatchTime {
    /// The moment `duration` from now, on Dispatch's clock: what a semaphore's timed wait takes.
    package static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        return .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
