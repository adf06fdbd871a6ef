#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// bind(2), listen(2) and connect(2) for any socket address type, and the address of a Unix socket's path: the
/// control socket's server and clients, the lab's air (loopback TCP and paths) and the tests that stand in for
/// either differ only in the address.
public enum SocketCalls {
    /// The longest path a Unix socket can have: `sun_path` holds 108 bytes with its NUL (unix(7)).
    public static let longestUnixPath = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// `close(2)`, reachable inside a type that has a `close()` of its own; the result is not looked at, as a
    /// descriptor is gone after close whatever it returns (POSIX leaves EINTR's state unspecified; Linux frees it).
    public static func close(_ fd: Int32) { _ = closeDescriptor(fd) }

    /// The address of the Unix socket at `path`; nil when the path is longer than `longestUnixPath` bytes.
    public static func unixAddress(_ path: String) -> sockaddr_un? {
        let bytes = Array(path.utf8)
        guard bytes.count <= longestUnixPath else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return address
    }

    /// One of a socket's two timeouts (socket(7), SO_RCVTIMEO and SO_SNDTIMEO).
    public enum Timeout: Sendable {
        /// How long a receive blocks before it fails with EAGAIN.
        case receive
        /// How long a send (or a connect, for a Unix socket) blocks before it fails with EAGAIN.
        case send
    }

    /// Sets `fd`'s `which` timeout to `duration`, to the microsecond; `.zero` blocks without limit (socket(7)).
    public static func setTimeout(_ which: Timeout, of fd: Int32, to duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        let option = which == .receive ? SO_RCVTIMEO : SO_SNDTIMEO
        _ = setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Binds `fd` to `address`; false with errno set when it fails.
    public static func bind<Address>(_ fd: Int32, to address: Address) -> Bool {
        passing(address) { systemBind(fd, $0, $1) }
    }

    /// Binds `fd` to `address` and listens with `backlog`; false with errno set when either call fails.
    public static func bindAndListen<Address>(_ fd: Int32, to address: Address, backlog: Int32 = 8) -> Bool {
        bind(fd, to: address) && listen(fd, backlog) == 0
    }

    /// Connects `fd` to `address`; false with errno set when it fails.
    public static func connect<Address>(_ fd: Int32, to address: Address) -> Bool {
        passing(address) { systemConnect(fd, $0, $1) }
    }

    /// Sends all of `bytes` on a stream socket, waiting for room as needed; MSG_NOSIGNAL, so a peer that hung up
    /// costs a false (EPIPE), not a SIGPIPE. False with errno set when a send fails.
    public static func sendAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let bytes = Array(bytes)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes {
                systemSend(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { return false }
            written += result
        }
        return true
    }

    /// Whether `call` succeeded (returned 0) given `address` as the generic `sockaddr` and its length.
    private static func passing<Address>(
        _ address: Address, to call: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Bool {
        var address = address
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call($0, socklen_t(MemoryLayout<Address>.size)) }
        } == 0
    }
}

// The system's calls under names the methods above do not shadow.
#if canImport(Glibc)
private let systemBind = Glibc.bind
private let systemConnect = Glibc.connect
private let systemSend = Glibc.send
#elseif canImport(Darwin)
private let systemBind = Darwin.bind
private let systemConnect = Darwin.connect
private let systemSend = Darwin.send
#endif

/// `close(2)` under a name `SocketCalls.close` can call without calling itself.
private func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }
