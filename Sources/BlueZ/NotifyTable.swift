@_spi(Backend) import Peripheral

/// Who each subscribed characteristic's updates reach, as bluetoothd set it up: a state machine with no I/O that
/// returns what the backend must report and which sockets it must close.
///
/// bluetoothd has had three ways to notify through an application (src/gatt-database.c, `ccc_write_cb`,
/// `acquire_notify_reply`, `sock_io_read`):
/// - `StartNotify` (no `NotifyAcquired` property): names no device; `PropertiesChanged(Value)` reaches every
///   subscriber. Reported as the central `Central.allSubscribersID`.
/// - 5.66 to 5.68: `AcquireNotify` once per characteristic, for the first subscriber; every datagram on its socket
///   reaches every subscriber. Also reported as `*` (with the first subscriber's MTU).
/// - 5.69 and later: `AcquireNotify` once per subscribing device, each with its own socket (commit 8eb1dee87), and
///   from 5.76 a datagram reaches only that socket's device (a08ec1a4e). Each device is then its own central.
///
/// The backend cannot read bluetoothd's version, and the options of an `AcquireNotify` are the same in every
/// version, so it learns from what bluetoothd does: a second `AcquireNotify` for a characteristic whose first
/// socket is still open, from another device, proves per-device sockets. Until then a socket is `*`'s; from then
/// on every socket, the earlier ones included, is its device's (the earlier `*` subscriptions are reported as
/// moving to their devices). On 5.69 to 5.75 the sockets are per device but each still reaches every subscriber:
/// docs/bluez.md says what a central sees there.
struct NotifyTable: Sendable, Equatable {
    /// One `AcquireNotify` socket, known to the backend by `token`.
    struct Subscriber: Sendable, Equatable {
        /// The backend's key for the socket.
        var token: Int
        /// The central it serves: `*` for a shared socket, the device otherwise.
        var central: Central
    }

    /// How one characteristic's updates leave.
    enum Path: Sendable, Equatable {
        /// `StartNotify`: `PropertiesChanged(Value)` to every subscriber.
        case properties(UpdateKind)
        /// One socket for every subscriber, first acquired by `device`.
        case shared(Subscriber, device: String, kind: UpdateKind)
        /// A socket per device, keyed by the device's path.
        case perDevice([String: Subscriber], kind: UpdateKind)
    }

    /// What the backend does after a change.
    enum Effect: Sendable, Equatable {
        /// Report `.subscribed`.
        case subscribed(Central, characteristicID: String, kind: UpdateKind)
        /// Report `.unsubscribed`.
        case unsubscribed(Central, characteristicID: String)
        /// Close our end of the socket `token` (bluetoothd let go of it or replaced it).
        case close(token: Int)
    }

    /// Where `send(_:to:)` writes an update.
    enum Route: Sendable, Equatable {
        /// The socket `token`.
        case socket(token: Int)
        /// `PropertiesChanged(Value)`.
        case properties
        /// Nowhere: the reason, for the manager's log.
        case none(String)
    }

    /// Each subscribed characteristic's path, by characteristic id.
    private(set) var paths: [String: Path] = [:]
    /// Whether bluetoothd has shown it acquires one socket per device (5.69+).
    private(set) var socketsArePerDevice = false

    /// Whether anyone is subscribed to `id`.
    func isNotifying(_ id: String) -> Bool { paths[id] != nil }

    /// Whether `id`'s updates go through sockets (`NotifyAcquired`).
    func isAcquired(_ id: String) -> Bool {
        switch paths[id] {
        case .shared?, .perDevice?: true
        case .properties?, nil: false
        }
    }

    /// The central the socket `token` serves now; nil once it is gone.
    func central(for token: Int) -> Central? {
        for path in paths.values {
            switch path {
            case .shared(let subscriber, _, _) where subscriber.token == token: return subscriber.central
            case .perDevice(let subscribers, _):
                if let found = subscribers.values.first(where: { $0.token == token }) { return found.central }
            default: continue
            }
        }
        return nil
    }

    /// Where an update of `id` for `central` goes.
    func route(_ id: String, to central: Central) -> Route {
        switch paths[id] {
        case nil: return .none("\(id) has no subscribers in bluetoothd")
        case .properties?: return .properties
        case .shared(let subscriber, _, _)?: return .socket(token: subscriber.token)
        case .perDevice(let subscribers, _)?:
            guard let subscriber = subscribers[central.id] else {
                return .none("\(central.id) is not subscribed to \(id)")
            }
            return .socket(token: subscriber.token)
        }
    }

    /// bluetoothd called `AcquireNotify` on `id` for `device` and got the socket `token`.
    mutating func acquired(_ id: String, device: String, mtu: Int, kind: UpdateKind, token: Int) -> [Effect] {
        let deviceCentral = Central(id: device, attMTU: mtu)
        switch paths[id] {
        case nil where socketsArePerDevice:
            paths[id] = .perDevice([device: Subscriber(token: token, central: deviceCentral)], kind: kind)
            return [.subscribed(deviceCentral, characteristicID: id, kind: kind)]
        case nil, .properties?:
            let all = Central(id: Central.allSubscribersID, attMTU: mtu)
            paths[id] = .shared(Subscriber(token: token, central: all), device: device, kind: kind)
            return [.subscribed(all, characteristicID: id, kind: kind)]
        case .shared(let old, let first, _)? where first == device:
            // The same device again (it subscribed anew before we saw the old socket close): the new one serves.
            paths[id] = .shared(Subscriber(token: token, central: old.central), device: device, kind: kind)
            return [.close(token: old.token)]
        case .shared?:
            // Another device while the first socket is open: bluetoothd acquires per device (5.69+, 8eb1dee87).
            var effects = becomePerDevice()
            effects += added(id, device: device, central: deviceCentral, kind: kind, token: token)
            return effects
        case .perDevice?:
            return added(id, device: device, central: deviceCentral, kind: kind, token: token)
        }
    }

    /// Adds `device`'s socket to a per-device path, replacing (and closing) one it had.
    private mutating func added(
        _ id: String, device: String, central: Central, kind: UpdateKind, token: Int
    ) -> [Effect] {
        guard case .perDevice(var subscribers, _)? = paths[id] else { return [] }
        let old = subscribers[device]
        subscribers[device] = Subscriber(token: token, central: central)
        paths[id] = .perDevice(subscribers, kind: kind)
        if let old { return [.close(token: old.token)] }
        return [.subscribed(central, characteristicID: id, kind: kind)]
    }

    /// Learns per-device sockets: every shared socket so far was its first device's, and is reported so.
    private mutating func becomePerDevice() -> [Effect] {
        socketsArePerDevice = true
        var effects: [Effect] = []
        for (id, path) in paths.sorted(by: { $0.key < $1.key }) {
            guard case .shared(let subscriber, let device, let kind) = path else { continue }
            let central = Central(id: device, maximumUpdateValueLength: subscriber.central.maximumUpdateValueLength)
            paths[id] = .perDevice([device: Subscriber(token: subscriber.token, central: central)], kind: kind)
            effects += [
                .unsubscribed(subscriber.central, characteristicID: id),
                .subscribed(central, characteristicID: id, kind: kind),
            ]
        }
        return effects
    }

    /// bluetoothd closed the socket `token`: its device unsubscribed (5.69+), or the last subscriber left (5.66).
    mutating func closed(token: Int) -> [Effect] {
        for (id, path) in paths {
            switch path {
            case .shared(let subscriber, _, _) where subscriber.token == token:
                paths[id] = nil
                return [.unsubscribed(subscriber.central, characteristicID: id), .close(token: token)]
            case .perDevice(var subscribers, let kind):
                guard let (device, subscriber) = subscribers.first(where: { $0.value.token == token }) else {
                    continue
                }
                subscribers[device] = nil
                paths[id] = subscribers.isEmpty ? nil : .perDevice(subscribers, kind: kind)
                return [.unsubscribed(subscriber.central, characteristicID: id), .close(token: token)]
            default: continue
            }
        }
        return [.close(token: token)]
    }

    /// bluetoothd called `StartNotify` on `id` (every enabling CCCD write calls it; only the first subscribes).
    mutating func started(_ id: String, kind: UpdateKind) -> [Effect] {
        guard paths[id] == nil else { return [] }
        paths[id] = .properties(kind)
        return [.subscribed(Central(id: Central.allSubscribersID), characteristicID: id, kind: kind)]
    }

    /// bluetoothd called `StopNotify` on `id`: the last `StartNotify` subscriber left.
    mutating func stopped(_ id: String) -> [Effect] {
        guard case .properties? = paths[id] else { return [] }
        paths[id] = nil
        return [.unsubscribed(Central(id: Central.allSubscribersID), characteristicID: id)]
    }

    /// Ends every subscription (the application was registered again, or bluetoothd went away): what bluetoothd
    /// learned about per-device sockets goes too, since the next bluetoothd may be another version.
    mutating func removeAll(keepingWhatWasLearned: Bool = true) -> [Effect] {
        var effects: [Effect] = []
        for (id, path) in paths.sorted(by: { $0.key < $1.key }) {
            switch path {
            case .properties:
                effects.append(.unsubscribed(Central(id: Central.allSubscribersID), characteristicID: id))
            case .shared(let subscriber, _, _):
                effects += [.close(token: subscriber.token), .unsubscribed(subscriber.central, characteristicID: id)]
            case .perDevice(let subscribers, _):
                for subscriber in subscribers.values.sorted(by: { $0.central.id < $1.central.id }) {
                    effects += [
                        .close(token: subscriber.token), .unsubscribed(subscriber.central, characteristicID: id),
                    ]
                }
            }
        }
        paths.removeAll()
        if !keepingWhatWasLearned { socketsArePerDevice = false }
        return effects
    }
}
