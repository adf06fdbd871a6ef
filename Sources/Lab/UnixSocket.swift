import Foundation

/// Stream sockets on a path: how the air, inside its network namespace, and `LabMachine`, outside it, reach each
/// other. A path belongs to the filesystem, not to a network namespace, so both sides see the same socket.
enum UnixSocket {
    /// An address for `path`; throws when it does not fit sun_path (108 bytes with its NUL).
    private static func address(_ path: String) throws(TCPEndpoint.Failure) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw TCPEndpoint.Failure(
                description: "the socket path \(path) is longer than \(capacity - 1) bytes: use a shorter --results")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return address
    }

    private static func newSocket() throws(TCPEndpoint.Failure) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TCPEndpoint.Failure(description: "socket: \(String(cString: strerror(errno)))") }
        return fd
    }

    /// A socket listening at `path`, replacing whatever file was there.
    static func listen(_ path: String) throws(TCPEndpoint.Failure) -> Int32 {
        var address = try address(path)
        let fd = try newSocket()
        unlink(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 4) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw TCPEndpoint.Failure(description: "cannot listen at \(path): \(reason)")
        }
        return fd
    }

    /// A socket connected to `path`.
    static func connect(_ path: String) throws(TCPEndpoint.Failure) -> Int32 {
        var address = try address(path)
        let fd = try newSocket()
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw TCPEndpoint.Failure(description: "cannot connect to \(path): \(reason)")
        }
        return fd
    }
}
