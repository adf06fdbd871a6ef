import GATTModel
import GATTProfile

/// Decides a profile's deliberate faults as a state machine: it counts requests and says which fault, if any,
/// applies to each; time-triggered faults come out of `tick(at:)`.
///
/// Exactly once still holds under faults, and keeping it is the caller's job: a request with a `delay` gets its one
/// answer later (the delay must stay under the engine's answer deadline, else the deadline answers it), and a
/// request with a `rejection` gets that error **instead of** its normal answer, never in addition to it.
public struct Faults: Sendable {
    /// What the faults triggered by one request ask of its single answer.
    public struct RequestFaults: Hashable, Sendable {
        /// Answer with this error instead of the normal answer (the first rejecting fault wins).
        public var rejection: ATTError?
        /// Hold the answer this long (the delays of every fault that fired, added).
        public var delay: Duration?
        /// Link faults to perform as well (`stopAdvertising`, `disconnect`), after answering.
        public var actions: [EmulationAction] = []

        /// Whether no fault fired: answer normally.
        public var isEmpty: Bool { rejection == nil && delay == nil && actions.isEmpty }
    }

    private struct Key: Hashable, Sendable {
        var operation: AttributeOperation
        var characteristicID: String?
    }

    private var faults: [Fault]
    private var counts: [Key: Int] = [:]
    private var timedDeadlines: [Int: Duration] = [:]

    /// The faults of a profile.
    public init(faults: [Fault]) { self.faults = faults }

    /// Counts a request (1-based, per characteristic and overall) and returns the faults whose nth it is.
    /// Each request fault fires once, on exactly its nth request. With no fault at all nothing is counted: every
    /// request would hash its characteristic twice for no one, and a fault injected later counts from its
    /// injection anyway.
    public mutating func request(_ operation: AttributeOperation, characteristicID: String) -> RequestFaults {
        guard !faults.isEmpty else { return RequestFaults() }
        counts[Key(operation: operation, characteristicID: characteristicID), default: 0] += 1
        counts[Key(operation: operation, characteristicID: nil), default: 0] += 1
        var result = RequestFaults()
        for fault in faults {
            guard Self.fires(fault, on: operation, characteristicID, counted: { counts[$0] }) else { continue }
            switch fault.effect {
            case .reject(let error): result.rejection = result.rejection ?? error
            case .delay(let delay): result.delay = (result.delay ?? .zero) + delay
            case .stopAdvertising: result.actions.append(.stopAdvertising)
            case .disconnect: result.actions.append(.disconnect)
            }
        }
        return result
    }

    /// Counts a batch's requests, one per request's characteristic id (an id requested twice counts twice), and returns
    /// their faults merged: the first rejection, the delays added, every action in order.
    public mutating func requests(
        _ operation: AttributeOperation, characteristicIDs: some Collection<String>
    ) -> RequestFaults {
        // No fault at all, the commonest: nothing to count or merge (an empty merge still cost an array append).
        guard !faults.isEmpty else { return RequestFaults() }
        var merged = RequestFaults()
        for id in characteristicIDs {
            let fired = request(operation, characteristicID: id)
            merged.rejection = merged.rejection ?? fired.rejection
            if let delay = fired.delay { merged.delay = (merged.delay ?? .zero) + delay }
            merged.actions += fired.actions
        }
        return merged
    }

    /// `requests(_:characteristicIDs:)`, unless a fault that would fire delays the answer: then nothing is counted
    /// and nil says the batch must go where it can wait (`BehaviourHandler.handleRead` or `handleWrites`, which
    /// count it there).
    public mutating func requestsUnlessDelayed(
        _ operation: AttributeOperation, characteristicIDs: some Collection<String>
    ) -> RequestFaults? {
        guard !wouldDelay(operation, characteristicIDs: characteristicIDs) else { return nil }
        return requests(operation, characteristicIDs: characteristicIDs)
    }

    /// Whether a delaying fault would fire on this batch, from the counts it would reach; nothing is counted.
    private func wouldDelay(_ operation: AttributeOperation, characteristicIDs: some Collection<String>) -> Bool {
        let delaying = faults.filter { if case .delay = $0.effect { true } else { false } }
        // Most profiles have none: nothing to count ahead.
        guard !delaying.isEmpty else { return false }
        var ahead: [Key: Int] = [:]
        for id in characteristicIDs {
            for key in [
                Key(operation: operation, characteristicID: id), Key(operation: operation, characteristicID: nil),
            ] {
                ahead[key, default: counts[key, default: 0]] += 1
            }
            if delaying.contains(where: { Self.fires($0, on: operation, id, counted: { ahead[$0] }) }) { return true }
        }
        return false
    }

    /// Whether `fault` fires on a request of `operation` on `characteristicID`, given the counts with that request
    /// in them: a request fault of that operation, on that characteristic or on any, whose nth it is.
    private static func fires(
        _ fault: Fault, on operation: AttributeOperation, _ characteristicID: String, counted: (Key) -> Int?
    ) -> Bool {
        guard case .request(let faultOperation, let target, let nth) = fault.trigger, faultOperation == operation,
            target == nil || target == characteristicID
        else { return false }
        return counted(Key(operation: operation, characteristicID: target)) == nth
    }

    /// Adds a request fault at run time (the control socket): its `nth` counts from now, so "reject the 2nd read"
    /// means the second read after this call. A time-triggered fault is armed `after` its delay from `now`.
    public mutating func inject(_ fault: Fault, at now: Duration) {
        var fault = fault
        switch fault.trigger {
        case .request(let operation, let target, let nth):
            let counted = count(of: operation, characteristicID: target)
            fault.trigger = .request(operation, characteristicID: target, nth: counted + nth)
        case .after(let delay):
            timedDeadlines[faults.count] = now + delay
        }
        faults.append(fault)
    }

    /// How many requests of an operation were counted on a characteristic, or on all when `characteristicID` is nil,
    /// since the first fault was known.
    public func count(of operation: AttributeOperation, characteristicID: String? = nil) -> Int {
        counts[Key(operation: operation, characteristicID: characteristicID), default: 0]
    }

    /// Arms the time-triggered faults, each `after` this instant.
    public mutating func start(at now: Duration) {
        timedDeadlines = [:]
        for (index, fault) in faults.enumerated() {
            if case .after(let delay) = fault.trigger { timedDeadlines[index] = now + delay }
        }
    }

    /// When the next time-triggered fault is due; nil when none is left.
    public var nextDeadline: Duration? { timedDeadlines.values.min() }

    /// Fires every time-triggered fault due by `now`, once each, in declaration order. A timed `reject` or `delay`
    /// has no request to act on and is dropped (the profile decoder does not produce one).
    public mutating func tick(at now: Duration) -> [EmulationAction] {
        var actions: [EmulationAction] = []
        for (index, deadline) in timedDeadlines.sorted(by: { $0.key < $1.key }) where deadline <= now {
            timedDeadlines[index] = nil
            switch faults[index].effect {
            case .stopAdvertising: actions.append(.stopAdvertising)
            case .disconnect: actions.append(.disconnect)
            case .reject, .delay: break
            }
        }
        return actions
    }
}
