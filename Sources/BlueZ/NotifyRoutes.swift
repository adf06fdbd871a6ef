import DBus
@_spi(Backend) import Peripheral

/// Where each subscription's updates leave, as `BlueZBackend.send(_:to:)` needs it on the manager's thread: a copy
/// of the loop's `NotifyTable`, its sockets and the published tree (the characteristics' paths), replaced whole
/// after every change (copy-on-write makes the copy cheap), so the sender never sees a table half changed.
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

    var table = NotifyTable()
    var sockets: [Int: AcquiredSocket] = [:]
    var tree = PublishedTree()

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
}
