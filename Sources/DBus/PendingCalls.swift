/// Our calls that wait for a reply, by serial, and the nearest of their deadlines: the loop thread's ledger of
/// outgoing calls (`ConnectionCore` keeps one and touches it on the loop thread only). Each call leaves it exactly
/// once: answered by its reply, expired at its deadline, or failed when the connection closes.
struct PendingCalls {
    /// One call waiting for its reply.
    struct Call {
        /// Kept so the reply's trace line can name the path, interface and member it answers.
        let message: Message
        let continuation: CheckedContinuation<Message, any Error>
        /// Monotonic nanoseconds after which the call fails with NoReply.
        let deadline: UInt64
    }

    private var calls: [UInt32: Call] = [:]
    /// The earliest deadline among the waiting calls (`.max` when none waits); it may lag behind an answered
    /// call, which only costs one early wake-up that `expire(now:)` then corrects.
    private(set) var nearestDeadline: UInt64 = .max

    /// Records `call`, sent with `serial`.
    mutating func add(_ call: Call, serial: UInt32) {
        calls[serial] = call
        nearestDeadline = min(nearestDeadline, call.deadline)
    }

    /// The call a reply with `serial` answers, no longer waiting; nil for an unknown or expired serial.
    mutating func answer(_ serial: UInt32) -> Call? { calls.removeValue(forKey: serial) }

    /// The calls whose deadline passed at `now`, no longer waiting.
    mutating func expire(now: UInt64) -> [(serial: UInt32, call: Call)] {
        guard now >= nearestDeadline else { return [] }
        var expired: [(serial: UInt32, call: Call)] = []
        var next = UInt64.max
        for (serial, call) in calls {
            if call.deadline <= now { expired.append((serial, call)) } else { next = min(next, call.deadline) }
        }
        nearestDeadline = next
        for (serial, _) in expired { calls[serial] = nil }
        return expired
    }

    /// Every waiting call, none waiting afterwards (the connection closed).
    mutating func removeAll() -> [Call] {
        defer {
            calls = [:]
            nearestDeadline = .max
        }
        return Array(calls.values)
    }
}
