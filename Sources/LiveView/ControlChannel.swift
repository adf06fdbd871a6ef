import ControlProtocol
import LocalIO

#if canImport(Glibc)
import Glibc
#endif

/// The control protocol's JSON.
typealias JSONValue = ControlProtocol.JSONValue

/// One connection to a device's control socket (docs/control-and-events.md): request lines out, one response line
/// back for each, in order. Each blocking call (connect, read) runs on a thread of its own (`OffPool`), so waiting on
/// the device holds no thread of the cooperative pool; the server keeps such a connection open between requests (a
/// silent one is closed after 300 s, which polling never reaches).
///
/// A read is never abandoned: a timeout or a stop shuts the socket down instead (`interrupt`), which ends the read as
/// the device closing would, and the socket is closed once nothing waits on it (a descriptor closed under a read
/// could be another connection's by the time the read returns).
actor ControlChannel {
    /// Why the device did not answer.
    struct Failure: Error, Sendable, CustomStringConvertible {
        /// The path and the reason.
        var description: String
    }

    /// How long a connect may wait for the device to accept: one claiming its socket but not serving yet holds it
    /// in the backlog (unix(7): a stream connect waits up to the send timeout).
    static let connectLimit = 5

    /// The socket's path.
    let path: String
    private var socket: Int32?
    private var pending: [UInt8] = []
    /// Why the connection was shut down while in use: a read that ends then fails with this reason.
    private var interruption: String?
    /// The requests sent and answered (or failed) so far: a timer that wakes just after its answer came does nothing.
    private var sent = 0
    private var answered = 0

    /// A channel to the socket at `path`; it connects at the first request.
    init(path: String) { self.path = path }

    /// Sends `request` and returns the response object. Throws `Failure` when the socket cannot be reached, closes,
    /// or takes longer than `timeout` (the connection is then dropped: a late answer must not answer the next one).
    func send(
        _ request: [String: JSONValue], timeout: Duration = .seconds(10)
    ) async throws(Failure) -> [String: JSONValue] {
        sent += 1
        let number = sent
        let timer = Task {
            try await Task.sleep(for: timeout)
            self.interrupt("no answer within \(timeout)", ifStillWaitingFor: number)
        }
        defer {
            timer.cancel()
            answered = number
        }
        do throws(Failure) {
            let socket = try await connected()
            // A request line is small, and the device reads each as it comes: the send timeout bounds it anyway.
            guard SocketCalls.sendAll(socket, Array((JSONValue.object(request).text + "\n").utf8)) else {
                throw systemFailure()
            }
            let line = try await nextLine()
            guard let response = (try? JSONValue(parsing: line))?.object else {
                throw Failure(description: "\(path): an answer that is not a JSON object")
            }
            return response
        } catch {
            let failure = interruption.map { Failure(description: "\(path): \($0)") } ?? error
            close()
            throw failure
        }
    }

    /// Sends `request` (`events` with `follow`) and hands each line after the response to `line`, until the device
    /// closes the stream, reading fails, or `interrupt` stops it. Throws `Failure` with the reason it ended.
    func follow(_ request: [String: JSONValue], line: @Sendable (String) async -> Void) async throws(Failure) {
        let first = try await send(request, timeout: .seconds(10))
        guard first["ok"] == .bool(true) else {
            close()
            throw Failure(description: "\(path): \(first["error"]?.string ?? "refused")")
        }
        do throws(Failure) {
            while true { await line(try await nextLine()) }
        } catch {
            let failure = interruption.map { Failure(description: "\(path): \($0)") } ?? error
            close()
            throw failure
        }
    }

    /// Shuts the connection down, so a read waiting on it ends (with `reason`) as if the device had closed it. It
    /// holds until `close`: a channel interrupted before it connected, or between two reads, reads nothing more.
    func interrupt(_ reason: String) {
        interruption = reason
        if let socket { _ = shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// `interrupt`, unless request number `request` has had its answer.
    private func interrupt(_ reason: String, ifStillWaitingFor request: Int) {
        if answered < request { interrupt(reason) }
    }

    /// Closes the connection; the next request opens a new one. Call only when no read waits on it (`interrupt`
    /// ends one).
    func close() {
        if let socket { SocketCalls.close(socket) }
        socket = nil
        pending = []
        interruption = nil
    }

    /// `path: ` and the system's words for errno ("No such file or directory", "Connection refused").
    private nonisolated func systemFailure() -> Failure {
        Failure(description: "\(path): \(String(cString: strerror(errno)))")
    }

    private func connected() async throws(Failure) -> Int32 {
        if let interruption { throw Failure(description: "\(path): \(interruption)") }
        if let socket { return socket }
        let path = path
        let outcome = await OffPool.run { () -> Result<Int32, Failure> in
            guard let address = SocketCalls.unixAddress(path) else {
                return .failure(Failure(description: "\(path): not a socket path"))
            }
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return .failure(Failure(description: "\(path): \(String(cString: strerror(errno)))")) }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            SocketCalls.setTimeout(.send, of: fd, to: .seconds(Self.connectLimit))
            guard SocketCalls.connect(fd, to: address) else {
                let reason =
                    errno == EAGAIN ? "not accepting within \(Self.connectLimit) s" : String(cString: strerror(errno))
                SocketCalls.close(fd)
                return .failure(Failure(description: "\(path): \(reason)"))
            }
            return .success(fd)
        }
        let socket = try outcome.get()
        self.socket = socket
        // Interrupted while connecting: the read to come must end too.
        if interruption != nil { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        return socket
    }

    /// The next line the device sent, without its newline.
    private func nextLine() async throws(Failure) -> String {
        while true {
            if let interruption { throw Failure(description: "\(path): \(interruption)") }
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            guard let socket else { throw Failure(description: "\(path): not connected") }
            let read = await OffPool.run { () -> (bytes: [UInt8], error: Int32) in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                    if count < 0 && errno == EINTR { continue }
                    return count < 0 ? ([], errno) : (Array(buffer[..<count]), 0)
                }
            }
            if let interruption { throw Failure(description: "\(path): \(interruption)") }
            guard read.error == 0 else {
                throw Failure(description: "\(path): \(String(cString: strerror(read.error)))")
            }
            guard !read.bytes.isEmpty else { throw Failure(description: "\(path): closed") }
            pending += read.bytes
        }
    }
}
