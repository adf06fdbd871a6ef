import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ControlClient {
    /// How a bridge ended.
    public enum BridgeEnd: Hashable, Sendable {
        /// `input` reached its end: whoever wrote the answers is done.
        case inputClosed
        /// The server closed the connection (the peripheral stopped, or a line could not be sent whole).
        case closed
    }

    /// Sends `request`, then carries lines both ways until either side ends: each line the server sends goes to
    /// `line`, and whatever is read from `input` (a descriptor: standard input, a pipe) is sent as it is. For
    /// `handle`, whose requests come out and whose answers go in, so a handler can be any program that reads and
    /// writes lines (`blemu ctl SOCKET handle ID` in a shell's `coproc`). Throws `Unreachable` when the socket
    /// cannot be reached or closes before the first line.
    public func bridge(
        _ request: [String: JSONValue], input: Int32, line: (String) -> Void
    ) throws(Unreachable)
        -> BridgeEnd
    {
        let fd = try connect(sending: JSONValue.object(request).text)
        defer { SocketCalls.close(fd) }
        var framer = LineFramer(maximumLength: ControlCommand.maximumLineLength)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var received = 0
        var watched = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: input, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            watched[0].revents = 0
            watched[1].revents = 0
            let ready = poll(&watched, nfds_t(watched.count), -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw Unreachable(description: "\(path): \(String(cString: strerror(errno)))") }
            if watched[0].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                for framed in framer.append(buffer[..<count]) {
                    guard case .line(let text) = framed else { continue }
                    received += 1
                    line(text)
                }
            }
            if watched[1].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return .inputClosed }
                guard SocketCalls.sendAll(fd, buffer[..<count]) else { break }
            }
        }
        if received == 0 { throw Unreachable(description: "\(path): closed before answering") }
        return .closed
    }
}
