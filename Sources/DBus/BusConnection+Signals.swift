import Synchronization

/// A live signal subscription; `cancel()` (or deinit) removes the handler and the bus match rule.
public final class SignalSubscription: Sendable {
    private let core: ConnectionCore
    private let id: UInt64
    private let rule: MatchRule
    private let isCancelled = Atomic<Bool>(false)

    init(core: ConnectionCore, id: UInt64, rule: MatchRule) {
        self.core = core
        self.id = id
        self.rule = rule
    }

    deinit { cancel() }

    /// Stops delivery at once and sends RemoveMatch (without waiting); calling it twice does nothing.
    public func cancel() {
        guard !isCancelled.exchange(true, ordering: .relaxed) else { return }
        let entry = core.subscriptions.withLock { $0.entries.removeValue(forKey: id) }
        entry?.onClose?()
        guard !core.isClosed,
            let message = try? Message.methodCall(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "RemoveMatch"),
            (try? message.append([.string(rule.description)])) != nil
        else { return }
        message.setNoReply()
        core.send(message)
    }
}

extension BusConnection {
    /// Calls `handler` on the loop thread (it must not block) for every signal matching `rule`, until the returned
    /// subscription is cancelled or released. Throws `DBusError` if the bus rejects the rule (AddMatch).
    public func subscribe(
        _ rule: MatchRule, handler: @escaping @Sendable (Signal) -> Void
    ) async throws -> SignalSubscription {
        try await subscribe(rule, handler: handler, onClose: nil)
    }

    /// Every signal matching `rule`, as a stream that ends when the connection closes; stopping iteration (or
    /// dropping the stream) unsubscribes. Throws `DBusError` if the bus rejects the rule.
    public func signals(matching rule: MatchRule) async throws -> AsyncStream<Signal> {
        let (stream, continuation) = AsyncStream<Signal>.makeStream()
        let subscription = try await subscribe(
            rule, handler: { continuation.yield($0) }, onClose: { continuation.finish() })
        continuation.onTermination = { _ in subscription.cancel() }
        return stream
    }

    /// The owner of `name` now (first element) and after every change: a unique name, or nil while nobody owns
    /// it (bluetoothd restarting). Built on `NameOwnerChanged`; throws `DBusError` if the bus refuses the match.
    public func nameOwnerChanges(of name: String) async throws -> AsyncStream<String?> {
        let (stream, continuation) = AsyncStream<String?>.makeStream()
        // Changes that arrive before the initial owner is known are held back, so the first element is the
        // current owner and the order stays true.
        let gate = Mutex<[String?]?>([])
        let rule = MatchRule(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged", arg0: name)
        let subscription = try await subscribe(
            rule,
            handler: { signal in
                guard signal.arguments.count == 3, case .string(let newOwner) = signal.arguments[2] else { return }
                let owner: String? = newOwner.isEmpty ? nil : newOwner
                let isHeld = gate.withLock { held in
                    guard held != nil else { return false }
                    held!.append(owner)
                    return true
                }
                if !isHeld { continuation.yield(owner) }
            }, onClose: { continuation.finish() })
        continuation.onTermination = { _ in subscription.cancel() }
        let current = try await nameOwner(name)
        continuation.yield(current)
        // Yielding under the lock keeps held-back changes ahead of any the loop thread delivers meanwhile.
        gate.withLock { held in
            for owner in held ?? [] { continuation.yield(owner) }
            held = nil
        }
        return stream
    }

    private func subscribe(
        _ rule: MatchRule, handler: @escaping @Sendable (Signal) -> Void, onClose: (@Sendable () -> Void)?
    ) async throws -> SignalSubscription {
        // Registered locally before AddMatch, so no signal the bus routes after accepting the rule is missed.
        let id = core.subscriptions.withLock { state in
            state.nextID += 1
            state.entries[state.nextID] = Subscriptions.Entry(rule: rule, handler: handler, onClose: onClose)
            return state.nextID
        }
        let subscription = SignalSubscription(core: core, id: id, rule: rule)
        _ = try await callBus("AddMatch", [.string(rule.description)])
        return subscription
    }
}
