import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// RootCanal's test channel (its port 6401): commands that shape the air, such as a controller's address or a link
/// to another air (model/setup/test_command_handler.cc).
///
/// The framing (model/setup/test_channel_transport.cc): a command is its name's length and name, the argument count,
/// then each argument's length and bytes (one byte each); an answer is a 4-byte little-endian length and text. A
/// new connection is greeted with one answer before any command. Every answer must be read before the connection
/// closes: RootCanal asserts that each answer's write succeeds and aborts on EPIPE (seen with 1.10.0).
struct RootCanalTestChannel {
    private let fd: Int32

    /// Connects to the test channel on the namespace's loopback and reads its greeting.
    init(port: UInt16) throws(TCPEndpoint.Failure) {
        do { fd = try LoopbackTCP.connect(port: port) } catch {
            throw TCPEndpoint.Failure(description: "RootCanal's test channel: \(error.description)")
        }
        _ = try answer()
    }

    /// Closes the connection (every answer has been read).
    func close() { Glibc.close(fd) }

    /// Sends `name` with `arguments` and returns RootCanal's answer.
    func command(_ name: String, _ arguments: [String]) throws(TCPEndpoint.Failure) -> String {
        try send(Self.frame(name, arguments))
        return try answer()
    }

    /// One command's bytes.
    static func frame(_ name: String, _ arguments: [String]) -> [UInt8] {
        var bytes = [UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(arguments.count)]
        for argument in arguments { bytes += [UInt8(argument.utf8.count)] + Array(argument.utf8) }
        return bytes
    }

    private func send(_ bytes: [UInt8]) throws(TCPEndpoint.Failure) {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else {
            throw TCPEndpoint.Failure(
                description: "RootCanal's test channel closed: \(String(cString: strerror(errno)))")
        }
    }

    private func receive(_ count: Int) throws(TCPEndpoint.Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 1, 5000) == 1 else {
                throw TCPEndpoint.Failure(description: "RootCanal's test channel did not answer within 5 s")
            }
            let received = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, count - offset, 0) }
            guard received > 0 else { throw TCPEndpoint.Failure(description: "RootCanal's test channel closed") }
            offset += received
        }
        return bytes
    }

    private func answer() throws(TCPEndpoint.Failure) -> String {
        let length = try receive(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        return String(decoding: try receive(length), as: UTF8.self)
    }
}
