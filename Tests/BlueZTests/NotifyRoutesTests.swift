import BlueZTesting
import DBus
import Glibc
@_spi(Backend) import Peripheral
import Testing

@testable import BlueZ

/// `NotifyRoutes` is the BlueZ side's one record of subscriptions: a change of the table takes out the sockets it
/// lets go (so no route reaches them), and a route is always the table's latest, never a copy's.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .serialized, .timeLimit(.minutes(1)))
struct NotifyRoutesTests {
    /// A notify socket on `connection`'s loop and the end bluetoothd would hold.
    struct Pair {
        let socket: AcquiredSocket
        let remote: Int32
    }

    static func pair(on connection: BusConnection) throws -> Pair {
        let fds = try AcquiredSocket.makePair()
        let socket = AcquiredSocket.forNotifications(
            fd: fds.local, on: connection, onWritable: {}, onConfirm: {}, onClosed: {})
        return Pair(socket: socket, remote: fds.remote)
    }

    /// The socket `route` names, if it names one.
    static func socket(_ route: NotifyRoutes.Route) -> AcquiredSocket? {
        if case .socket(let socket) = route { socket } else { nil }
    }

    @Test func aSocketTheTableLetsGoIsHandedBackAndNoRouteReachesItAgain() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect("routes")
        defer { connection.close() }
        let pairs = try (0..<3).map { _ in try Self.pair(on: connection) }
        defer { for pair in pairs { close(pair.remote) } }
        let all = Central(id: Central.allSubscribersID)
        var routes = NotifyRoutes()

        // The first device's socket serves everyone (5.66).
        let first = routes.reserveToken()
        var change = routes.change(adding: (first, pairs[0].socket)) {
            $0.acquired("hr", device: "/dev_A", mtu: 23, kind: .notification, token: first)
        }
        #expect(change.closing.isEmpty)
        #expect(Self.socket(routes.route("hr", to: all)) === pairs[0].socket)

        // The same device again: the new socket serves, the old one is handed back to close.
        let again = routes.reserveToken()
        change = routes.change(adding: (again, pairs[1].socket)) {
            $0.acquired("hr", device: "/dev_A", mtu: 23, kind: .notification, token: again)
        }
        #expect(change.closing.map(ObjectIdentifier.init) == [ObjectIdentifier(pairs[0].socket)])
        #expect(Self.socket(routes.route("hr", to: all)) === pairs[1].socket)

        // Another device while that one is open: per-device sockets, each device its own route.
        let second = routes.reserveToken()
        #expect(second != first && second != again)
        change = routes.change(adding: (second, pairs[2].socket)) {
            $0.acquired("hr", device: "/dev_B", mtu: 23, kind: .notification, token: second)
        }
        #expect(change.closing.isEmpty)
        #expect(Self.socket(routes.route("hr", to: Central(id: "/dev_A"))) === pairs[1].socket)
        #expect(Self.socket(routes.route("hr", to: Central(id: "/dev_B"))) === pairs[2].socket)

        // bluetoothd closes B's socket: handed back, and B has no route.
        change = routes.change { $0.closed(token: second) }
        #expect(change.closing.map(ObjectIdentifier.init) == [ObjectIdentifier(pairs[2].socket)])
        #expect(Self.socket(routes.route("hr", to: Central(id: "/dev_B"))) == nil)

        // Shutdown hands back what is left, once.
        #expect(routes.removeAll().map(ObjectIdentifier.init) == [ObjectIdentifier(pairs[1].socket)])
        #expect(routes.removeAll().isEmpty)
        #expect(!routes.table.isNotifying("hr"))
        for pair in pairs { pair.socket.close() }
    }
}
