import FoundationEssentials
import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Stream sockets on a path: how the air, inside its network namespace, and `LabMachine`, outside it, reach each
/// other. A path belongs to the filesystem, not to a network namespace, so both sides see the same socket.
enum UnixSocket {
    /// An address for `path`; throws when it does not fit sun_path (108 bytes with its NUL).
    private static func address(_ path: String) throws(TCPEndpoint.Failure) -> sockaddr_un {
        guard let address = SocketCalls.unixAddress(path) else {
            throw TCPEndpoint.Failure(
                description: "the socket path \(path) is longer than \(SocketCalls.longestUnixPath) bytes: use a "
                    + "shorter --results")
        }
        return address
    }

    private static func newSocket() throws(TCPEndpoint.Failure) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TCPEndpoint.Failure(description: "socket: \(String(cString: strerror(errno)))") }
        return fd
    }

    /// A socket listening at `path`, replacing whatever file was there.
    static func listen(_ path: String) throws(TCPEndpoint.Failure) -> Int32 {
        let address = try address(path)
        let fd = try newSocket()
        unlink(path)
        guard SocketCalls.bindAndListen(fd, to: address) else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw TCPEndpoint.Failure(description: "cannot listen at \(path): \(reason)")
        }
        return fd
    }

    /// A socket connected to `path`.
    static func connect(_ path: String) throws(TCPEndpoint.Failure) -> Int32 {
        let address = try address(path)
        let fd = try newSocket()
        guard SocketCalls.connect(fd, to: address) else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw TCPEndpoint.Failure(description: "cannot connect to \(path): \(reason)")
        }
        return fd
    }
}
