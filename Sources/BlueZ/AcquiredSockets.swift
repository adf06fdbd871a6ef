/// Our ends of the sockets bluetoothd acquired: `AcquireNotify`'s by the token `NotifyTable` knows each by, and
/// `AcquireWrite`'s by characteristic id (5.66 keeps one write socket per characteristic). Taking a socket out is
/// the caller's cue to close it, after whatever must happen first (publishing the routes, reporting the change).
struct AcquiredSockets: Sendable {
    /// Notify sockets by token.
    private(set) var notify: [Int: AcquiredSocket] = [:]
    /// Write streams by characteristic id.
    private var writes: [String: AcquiredSocket] = [:]
    /// The next notify socket's token: never reused, so an event of a closed socket finds nothing.
    private var nextToken = 0

    /// Keeps the notify socket `make` builds for a new token (its events name it); returns the token.
    mutating func addNotify(_ make: (Int) -> AcquiredSocket) -> Int {
        let token = nextToken
        nextToken += 1
        notify[token] = make(token)
        return token
    }

    /// Takes out the notify socket of `token`.
    mutating func removeNotify(_ token: Int) -> AcquiredSocket? { notify.removeValue(forKey: token) }

    /// Whether the characteristic's writes stream through a socket.
    func isWriteAcquired(_ id: String) -> Bool { writes[id] != nil }

    /// Keeps the characteristic's write stream; returns the one it replaces.
    mutating func setWrite(_ socket: AcquiredSocket, for id: String) -> AcquiredSocket? {
        writes.updateValue(socket, forKey: id)
    }

    /// Takes out the characteristic's write stream.
    mutating func removeWrite(_ id: String) -> AcquiredSocket? { writes.removeValue(forKey: id) }

    /// Takes out every write stream, by characteristic id in order.
    mutating func removeWrites() -> [(id: String, socket: AcquiredSocket)] {
        defer { writes.removeAll() }
        return writes.sorted { $0.key < $1.key }.map { (id: $0.key, socket: $0.value) }
    }

    /// Takes out every socket, notify and write.
    mutating func removeAll() -> [AcquiredSocket] {
        defer {
            notify.removeAll()
            writes.removeAll()
        }
        return Array(notify.values) + Array(writes.values)
    }
}
