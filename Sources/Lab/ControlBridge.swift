import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How the command's VM reaches the control sockets of a fleet's other VMs (docs/lab.md, "A fleet"). A Unix socket
/// does not cross a VM's edge, so each VM of a fleet gets qemu's user-mode network (slirp: the guest is 10.0.2.15,
/// the host 10.0.2.2, qemu's "Network emulation" docs), inside the air's network namespace:
///
/// - a fleet VM's `blemu lab bridge` takes TCP on `guestPort(controller:)` and joins each connection to that
///   controller's control socket; qemu forwards the namespace's `127.0.0.1:airPort(place:)` there (`hostfwd`);
/// - the command's VM has `/run/blemu/vmN/hciM.sock` for each fleet peripheral, where its own `blemu lab bridge`
///   joins each connection to `10.0.2.2:airPort(place:)`, which slirp connects on the namespace's loopback.
///
/// Nothing listens outside the namespace, so nothing on the host's network reaches a control socket. The ports and
/// qemu's arguments are pure; `start` and `serve` open the sockets.
public enum ControlBridge {
    /// The guest's address on slirp's network (qemu's default `dhcpstart`).
    static let guestAddress = "10.0.2.15"
    /// The host as slirp shows it to a guest: its connections there go to the namespace's loopback.
    static let hostAddress = "10.0.2.2"
    /// Where the fleet VMs' controllers are forwarded on the namespace's loopback: above the relay's ports
    /// (`RootCanalAir.relayPort` + place), one per place on the air.
    static let airPortBase: UInt16 = 7200
    /// Where a fleet VM takes connections for its controllers, one port each.
    static let guestPortBase: UInt16 = 7000

    /// The namespace's port for the controller at `place` on the air (`LabFleet.Machine.firstController` + its
    /// index in its VM).
    static func airPort(place: Int) -> UInt16 { airPortBase + UInt16(place) }

    /// The port a fleet VM takes connections on for its controller `hciN`.
    static func guestPort(controller: Int) -> UInt16 { guestPortBase + UInt16(controller) }

    /// The command's VM's socket for a fleet peripheral, `vmN/hciM` (`BLEMU_LAB_PERIPHERAL`'s own name for it).
    static func localSocket(machine: String, controller: String) -> String {
        "/run/blemu/\(machine)/\(controller).sock"
    }

    /// qemu's network for a fleet VM serving `controllers` from `firstController` on: each controller's port
    /// forwarded from the namespace's loopback, and nothing else (`restrict=on`: the guest reaches no host port).
    static func servingNetwork(firstController: Int, controllers: Int) -> [String] {
        let forwards = (0..<controllers).map { index in
            ",hostfwd=tcp:127.0.0.1:\(airPort(place: firstController + index))-:\(guestPort(controller: index))"
        }
        return ["-nic", "user,model=virtio-net-pci,restrict=on" + forwards.joined()]
    }

    /// qemu's network for the command's VM: slirp, whose 10.0.2.2 is the namespace's loopback.
    static let reachingNetwork = ["-nic", "user,model=virtio-net-pci"]

    /// One side of a join: a path or a TCP address.
    public enum Endpoint: Sendable, Equatable, CustomStringConvertible {
        /// A Unix stream socket.
        case unix(String)
        /// A TCP address.
        case tcp(TCPEndpoint)

        /// Parses `unix:PATH` or `tcp:HOST:PORT`; nil otherwise.
        public init?(_ text: String) {
            if text.hasPrefix("unix:"), text.count > 5 {
                self = .unix(String(text.dropFirst(5)))
            } else if text.hasPrefix("tcp:"), let endpoint = TCPEndpoint(String(text.dropFirst(4))) {
                self = .tcp(endpoint)
            } else {
                return nil
            }
        }

        /// `unix:PATH` or `tcp:HOST:PORT`.
        public var description: String {
            switch self {
            case .unix(let path): "unix:" + path
            case .tcp(let endpoint): "tcp:" + endpoint.description
            }
        }

        func listen() throws(TCPEndpoint.Failure) -> Int32 {
            switch self {
            case .unix(let path): try UnixSocket.listen(path)
            case .tcp(let endpoint): try endpoint.listen()
            }
        }

        func connect() throws(TCPEndpoint.Failure) -> Int32 {
            switch self {
            case .unix(let path): try UnixSocket.connect(path)
            case .tcp(let endpoint): try endpoint.connect()
            }
        }
    }

    /// Connections taken at `listen`, each joined to a new one to `dial`.
    public struct Join: Sendable, Equatable, CustomStringConvertible {
        /// Where connections come in.
        public let listen: Endpoint
        /// Where each is carried.
        public let dial: Endpoint

        /// Parses `LISTEN=DIAL`, each side an `Endpoint`; nil otherwise.
        public init?(_ text: String) {
            guard let equals = text.firstIndex(of: "="),
                let listen = Endpoint(String(text[..<equals])),
                let dial = Endpoint(String(text[text.index(after: equals)...]))
            else { return nil }
            self.listen = listen
            self.dial = dial
        }

        /// `LISTEN=DIAL`.
        public var description: String { "\(listen)=\(dial)" }
    }

    /// Serves `joins` until the process is signalled (`start`).
    public static func serve(
        _ joins: [Join], log: @escaping @Sendable (String) -> Void
    ) throws(TCPEndpoint.Failure) -> Never {
        _ = try start(joins, log: log)
        while true { pause() }
    }

    /// `joins` on one splice that logs to `log`, started; throws when an endpoint cannot listen. A connection whose
    /// other end does not answer within 10 s is closed: the device behind it is gone, and a client waiting longer
    /// would only hang.
    static func start(
        _ joins: [Join], log: @escaping @Sendable (String) -> Void
    ) throws(TCPEndpoint.Failure) -> SocketSplice {
        var entrances: [SocketSplice.Entrance] = []
        do throws(TCPEndpoint.Failure) {
            for join in joins {
                let dial = join.dial
                entrances.append(
                    .init(
                        name: join.description, source: .listener(try join.listen.listen()),
                        dial: { () throws(TCPEndpoint.Failure) in try dial.connect() }, patience: .seconds(10)))
            }
            let splice = try SocketSplice(entrances: entrances, log: log)
            do { try splice.start() } catch {
                splice.stop()
                throw error
            }
            return splice
        } catch {
            // Nothing of a start that failed stays: the listeners close, and the socket files made for them go (a
            // closed socket's file would still be there for the next start to replace, and for `ls` to show).
            for entrance in entrances { if case .listener(let fd) = entrance.source { close(fd) } }
            for join in joins.prefix(entrances.count) { if case .unix(let path) = join.listen { unlink(path) } }
            throw error
        }
    }
}
