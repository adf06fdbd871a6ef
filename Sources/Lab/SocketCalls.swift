import Foundation

/// bind(2) with listen(2), and connect(2), for any socket address type: the loopback TCP of the air's namespace
/// (`LoopbackTCP`) and the paths the air meets the host through (`UnixSocket`) differ only in the address.
enum SocketCalls {
    /// Binds `fd` to `address` and listens with `backlog`; false with errno set when either call fails.
    static func bindAndListen<Address>(_ fd: Int32, to address: Address, backlog: Int32 = 4) -> Bool {
        var address = address
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
        return bound == 0 && listen(fd, backlog) == 0
    }

    /// Connects `fd` to `address`; false with errno set when it fails.
    static func connect<Address>(_ fd: Int32, to address: Address) -> Bool {
        var address = address
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size))
            }
        } == 0
    }
}
