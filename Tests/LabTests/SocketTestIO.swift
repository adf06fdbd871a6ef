import Foundation

/// What the socket tests (AirLinkTests, ControlBridgeTests) do at their ends of a connection: a scratch directory
/// for socket paths, a bounded read, and a write of text.
enum SocketTestIO {
    /// A new scratch directory for sockets named `prefix`-RANDOM under /tmp, short enough for sun_path.
    static func scratchDirectory(_ prefix: String) throws -> String {
        let path = "/tmp/\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Reads from `fd` until what came satisfies `done`, the other end closes, or 5 s passed.
    static func receive(_ fd: Int32, until done: ([UInt8]) -> Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(5)
        while !done(bytes) && ContinuousClock.now < deadline {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 1, 100) == 1 else { continue }
            var buffer = [UInt8](repeating: 0, count: 256)
            let received = recv(fd, &buffer, buffer.count, 0)
            guard received > 0 else { break }
            bytes += buffer.prefix(received)
        }
        return bytes
    }

    /// Writes `text` to `fd`, without SIGPIPE when the other end is gone.
    static func send(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
