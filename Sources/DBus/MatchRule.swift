/// A D-Bus match rule for signals (D-Bus Specification, "Match Rules"); nil fields match anything.
/// Sent to the bus with AddMatch and also applied locally, since one connection's rules are pooled by the bus.
public struct MatchRule: Hashable, Sendable, CustomStringConvertible {
    /// The sender; only a unique name (`:1.5`) or `org.freedesktop.DBus` can be checked locally. A well-known
    /// name is left to the bus (signals carry unique names), so overlapping rules may then see each other's signals.
    public var sender: String?
    /// Exactly this object path.
    public var path: ObjectPath?
    /// This path or any path below it.
    public var pathNamespace: ObjectPath?
    /// The interface.
    public var interface: String?
    /// The signal name.
    public var member: String?
    /// The first argument, which must be a string equal to this.
    public var arg0: String?

    /// A rule; nothing is checked until it is sent (a rule the bus rejects makes `subscribe` throw).
    public init(
        sender: String? = nil, path: ObjectPath? = nil, pathNamespace: ObjectPath? = nil, interface: String? = nil,
        member: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule text for AddMatch, e.g. `type='signal',interface='org.freedesktop.DBus.Properties'`.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            // Inside a quoted value only ' needs escaping, as '\'' (close, escaped quote, reopen).
            if let value {
                parts.append(
                    "\(key)='\(value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''"))'"
                )
            }
        }
        add("sender", sender)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("interface", interface)
        add("member", member)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    func matches(_ signal: Signal) -> Bool {
        if let sender, sender.hasPrefix(":") || sender == "org.freedesktop.DBus", signal.sender != sender {
            return false
        }
        if let path, signal.path != path { return false }
        if let pathNamespace, signal.path != pathNamespace, !signal.path.isDescendant(of: pathNamespace) {
            return false
        }
        if let interface, signal.interface != interface { return false }
        if let member, signal.member != member { return false }
        if let arg0 {
            guard case .string(let first)? = signal.arguments.first, first == arg0 else { return false }
        }
        return true
    }
}

/// A received signal.
public struct Signal: Sendable {
    /// The sender's unique name (`org.freedesktop.DBus` for the bus itself).
    public var sender: String?
    /// The emitting object.
    public var path: ObjectPath
    /// The interface.
    public var interface: String
    /// The signal name.
    public var member: String
    /// The arguments; `UnixFD`s among them are duplicates the receiver owns.
    public var arguments: [DBusValue]
}

/// The signal handlers of one connection.
struct Subscriptions {
    struct Entry {
        let rule: MatchRule
        let handler: @Sendable (Signal) -> Void
        let onClose: (@Sendable () -> Void)?
    }
    var nextID: UInt64 = 0
    var entries: [UInt64: Entry] = [:]
}

extension ConnectionCore {
    /// Decodes a signal once and hands it to every matching handler, outside the lock (loop thread).
    func deliverSignal(_ message: Message) {
        counters.signalsReceived.add(1, ordering: .relaxed)
        let signal = Signal(
            sender: message.sender, path: message.path ?? .root, interface: message.interface ?? "",
            member: message.member ?? "", arguments: message.arguments())
        trace(
            "← signal",
            metadata: [
                "sender": "\(signal.sender ?? "")", "path": "\(signal.path)", "interface": "\(signal.interface)",
                "member": "\(signal.member)",
            ])
        let handlers = subscriptions.withLock { state in
            state.entries.values.filter { $0.rule.matches(signal) }.map(\.handler)
        }
        for handler in handlers { handler(signal) }
    }
}
