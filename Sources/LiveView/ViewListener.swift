import LocalIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The view's listening TCP socket and its accept loop, on a thread of its own.
final class ViewListener: Sendable {
    /// The system's reason a socket call failed ("Address already in use").
    struct Failure: Error, CustomStringConvertible {
        /// `strerror`'s words.
        var description: String
    }

    /// The port listened on: the one asked for, or the one the system chose for port 0.
    let port: UInt16
    private let fd: Int32
    /// `stopping`, set by `stop`: an accept that fails from then on is the stop, not a failure. `closed`, set when
    /// the loop closes the descriptor: `stop` shuts it down only while it is open, so never a number reused since.
    private let state = Mutex((stopping: false, closed: false))

    /// Binds and listens on `address`; throws the system's reason.
    init(_ address: ViewAddress) throws(Failure) {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Self.failure() }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        // A view restarted at once finds its port in TIME_WAIT otherwise; a port another socket listens on stays
        // refused (Linux's SO_REUSEADDR).
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound: Bool
        if address.isIPv6 {
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = address.port.bigEndian
            bound =
                inet_pton(AF_INET6, address.host, &socketAddress.sin6_addr) == 1
                && SocketCalls.bindAndListen(fd, to: socketAddress, backlog: 128)
        } else {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = address.port.bigEndian
            bound =
                inet_pton(AF_INET, address.host, &socketAddress.sin_addr) == 1
                && SocketCalls.bindAndListen(fd, to: socketAddress, backlog: 128)
        }
        guard bound else {
            let failure = Self.failure()
            close(fd)
            throw failure
        }
        var taken = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &taken) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        // sin_port and sin6_port sit at the same offset.
        port = UInt16(bigEndian: taken.sin6_port)
        self.fd = fd
    }

    /// Accepts connections on a thread of its own, handing each to `serving` on a thread of its own, until `stop`
    /// (`ended(nil)`) or an accept fails (`ended` with the system's reason: out of descriptors).
    func accept(serving: @escaping @Sendable (Int32) -> Void, ended: @escaping @Sendable (String?) -> Void) {
        do {
            try DetachedThread.start { [self] in ended(loop(serving)) }
        } catch {
            ended("\(error)")
        }
    }

    /// Ends the accept loop: its blocked accept returns.
    func stop() {
        state.withLock { state in
            state.stopping = true
            if !state.closed { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Errors accept(2) says to retry on Linux: a connection that failed before it was taken, not the listener.
    private static let passing: Set<Int32> = [
        EINTR, ECONNABORTED, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETDOWN, ENETUNREACH,
    ]

    private func loop(_ serving: @escaping @Sendable (Int32) -> Void) -> String? {
        defer {
            state.withLock { state in
                state.closed = true
                close(fd)
            }
        }
        while true {
            let connection = Glibc.accept(fd, nil, nil)
            let failure = errno
            if state.withLock({ $0.stopping }) {
                if connection >= 0 { close(connection) }
                return nil
            }
            guard connection >= 0 else {
                if Self.passing.contains(failure) { continue }
                return String(cString: strerror(failure))
            }
            // Close-on-exec as the listener (accept4 is not in Glibc's Swift overlay).
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            do { try DetachedThread.start { serving(connection) } } catch {
                // No thread for it (the process's limit): refused by closing, and the view accepts on.
                close(connection)
            }
        }
    }

    private static func failure() -> Failure { Failure(description: String(cString: strerror(errno))) }
}
