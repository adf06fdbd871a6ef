import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ControlClient {
    /// How a stream bounded by a deadline ended.
    public enum StreamEnd: Hashable, Sendable {
        /// `line` returned false.
        case stopped
        /// The server closed the connection: the peripheral stopped.
        case closed
        /// The deadline came first.
        case deadline
        /// The input a bridge carries to the server reached its end (`bridge`).
        case inputClosed
    }

    /// `stream(_:line:)` that gives up at `deadline`: every wait for bytes is a poll(2) ending then, so the calling
    /// thread is free by the deadline however quiet the device is (a tool waiting for an event must not keep a
    /// thread blocked in read(2) until the peripheral stops). The connection is closed whichever way it ends.
    /// Throws `Unreachable` when the socket cannot be reached or closes before the first line.
    public func stream(
        _ request: [String: JSONValue], until deadline: ContinuousClock.Instant, line: (String) -> Bool
    ) throws(Unreachable) -> StreamEnd {
        try stream(request, deadline: deadline, line: line)
    }

    /// The stream of both `stream` calls and of `bridge`: with no deadline, poll waits until a line or the end
    /// comes; with an `input`, what is read from it is sent to the server as it is.
    func stream(
        _ request: [String: JSONValue], deadline: ContinuousClock.Instant?, input: Int32? = nil,
        line: (String) -> Bool
    ) throws(Unreachable) -> StreamEnd {
        let fd = try connect(sending: JSONValue.object(request).text)
        defer { SocketCalls.close(fd) }
        var framer = LineFramer(maximumLength: ControlCommand.maximumLineLength)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var received = 0
        while true {
            var milliseconds = -1
            if let deadline {
                let remaining = deadline - .now
                guard remaining > .zero else { return .deadline }
                // Rounded up, so a wait never ends a little before the deadline and spins on a zero timeout.
                milliseconds = min(Int(Int32.max), Int((remaining / .milliseconds(1)).rounded(.up)))
            }
            var watched = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            if let input { watched.append(pollfd(fd: input, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&watched, nfds_t(watched.count), Int32(milliseconds))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else {
                if ready == 0 { continue }  // the loop's check says whether the deadline passed
                throw Unreachable(description: "\(path): \(String(cString: strerror(errno)))")
            }
            if watched[0].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                for framed in framer.append(buffer[..<count]) {
                    guard case .line(let text) = framed else { continue }
                    received += 1
                    guard line(text) else { return .stopped }
                }
            }
            if let input, watched[1].revents != 0 {
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
