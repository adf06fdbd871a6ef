import DBus
@_spi(Backend) import Peripheral

/// The BlueZ side's one record of subscriptions: who each subscribed characteristic's updates reach (`NotifyTable`),
/// our ends of the `AcquireNotify` sockets the table names by token, and the characteristics' object paths for
/// `StartNotify`'s `PropertiesChanged`. The loop changes it and `BlueZBackend.send(_:to:)` reads it on the manager's
/// thread, both under the backend's `routes` lock, so there is no copy to keep in step and a route is never older
/// than the table.
struct NotifyRoutes: Sendable {
    /// Where one update goes.
    enum Route {
        /// One datagram on this socket.
        case socket(AcquiredSocket)
        /// `PropertiesChanged(Value)` on this characteristic's object.
        case properties(ObjectPath)
        /// Nowhere: the reason, for the manager's log.
        case none(String)
    }

    /// Who each subscribed characteristic's updates reach.
    private(set) var table = NotifyTable()
    /// The application as exported, for each characteristic's path; the backend's `tree` sets it on every change.
    var tree = PublishedTree()
    /// Our ends of the notify sockets, by the token `table` knows each by.
    private var sockets: [Int: AcquiredSocket] = [:]
    /// The next notify socket's token: never reused, so an event of a closed socket finds nothing.
    private var nextToken = 0

    /// Where `central`'s update of characteristic `id` goes.
    func route(_ id: String, to central: Central) -> Route {
        switch table.route(id, to: central) {
        case .none(let reason):
            return .none(reason)
        case .socket(let token):
            guard let socket = sockets[token] else { return .none("the notify socket of \(id) is closed") }
            return .socket(socket)
        case .properties:
            guard let path = tree.characteristicPath(id) else { return .none("\(id) is not published") }
            return .properties(path)
        }
    }

    /// A token for the next notify socket; `change` then adds the socket with it.
    mutating func reserveToken() -> Int {
        defer { nextToken += 1 }
        return nextToken
    }

    /// Changes the table, keeping `adding` (a new socket and its token) first; returns the table's effects and the
    /// sockets they let go, taken out here so no route reaches them: the caller closes them after reporting.
    mutating func change(
        adding added: (token: Int, socket: AcquiredSocket)? = nil,
        _ body: (inout NotifyTable) -> [NotifyTable.Effect]
    ) -> (effects: [NotifyTable.Effect], closing: [AcquiredSocket]) {
        if let added { sockets[added.token] = added.socket }
        let effects = body(&table)
        var closing: [AcquiredSocket] = []
        for case .close(let token) in effects {
            if let socket = sockets.removeValue(forKey: token) { closing.append(socket) }
        }
        return (effects, closing)
    }

    /// Ends every subscription at shutdown: the table empties and every socket is handed back to close.
    mutating func removeAll() -> [AcquiredSocket] {
        _ = table.removeAll()
        defer { sockets.removeAll() }
        return Array(sockets.values)
    }
}
