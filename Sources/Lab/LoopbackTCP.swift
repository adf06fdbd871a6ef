import FoundationEssentials
import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few TCP calls the radio's relay makes, all on 127.0.0.1 inside the lab's network namespace.
enum LoopbackTCP {
    /// A failed call, with errno's text.
    struct Failure: Error, CustomStringConvertible {
        /// What was being done and why it failed.
        let description: String
    }

    /// A socket address for 127.0.0.1:`port`.
    private static func address(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private static func newSocket() throws(Failure) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        return fd
    }

    /// A connected socket with Nagle's algorithm off (each H4 packet leaves as it is written); throws when the port
    /// refuses.
    static func connect(port: UInt16) throws(Failure) -> Int32 {
        let fd = try newSocket()
        guard SocketCalls.connect(fd, to: address(port)) else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connecting to 127.0.0.1:\(port): \(reason)")
        }
        setOption(fd, TCP_NODELAY)
        return fd
    }

    /// A socket listening on 127.0.0.1:`port`.
    static func listen(port: UInt16) throws(Failure) -> Int32 {
        let fd = try newSocket()
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard SocketCalls.bindAndListen(fd, to: address(port)) else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "listening on 127.0.0.1:\(port): \(reason)")
        }
        return fd
    }

    /// Sets a TCP option to 1.
    static func setOption(_ fd: Int32, _ option: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), option, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Brings up the loopback interface, which a new network namespace starts with down (SIOCSIFFLAGS, netdevice(7)).
    static func bringUpLoopback() throws(Failure) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var request = ifreq()
        withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { name in
            for (index, byte) in "lo".utf8.enumerated() { name[index] = byte }
        }
        guard ioctl(fd, UInt(SIOCGIFFLAGS), &request) == 0 else {
            throw Failure(description: "reading lo's flags: \(String(cString: strerror(errno)))")
        }
        request.ifr_ifru.ifru_flags |= Int16(IFF_UP)
        guard ioctl(fd, UInt(SIOCSIFFLAGS), &request) == 0 else {
            throw Failure(description: "bringing lo up: \(String(cString: strerror(errno)))")
        }
    }
}
