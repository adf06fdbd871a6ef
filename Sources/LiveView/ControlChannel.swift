import ControlProtocol
import FlyingSocks
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The control protocol's JSON (FlyingFox has a type of the same name).
typealias JSONValue = ControlProtocol.JSONValue

/// One connection to a device's control socket (docs/control-and-events.md): request lines out, one response line
/// back for each, in order. Async on FlyingSocks' pool, so waiting on the device holds no thread; the server keeps
/// such a connection open between requests (a silent one is closed after 300 s, which polling never reaches).
///
/// A read waiting on the pool is never cancelled: FlyingSocks 0.27 keeps a cancelled read's descriptor in its poll
/// set, and the next socket given the same number then never hears of its data (seen: a view's second page got no
/// events). A timeout or a stop shuts the socket down instead (`interrupt`), which ends the read as the device
/// closing would, and the socket is closed once nothing waits on it.
actor ControlChannel {
    /// Why the device did not answer.
    struct Failure: Error, Sendable, CustomStringConvertible {
        /// The path and the reason.
        var description: String
    }

    /// The socket's path.
    let path: String
    private var socket: AsyncSocket?
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
        do {
            let socket = try await connected()
            try await socket.write(Data((JSONValue.object(request).text + "\n").utf8))
            let line = try await nextLine()
            guard let response = (try? JSONValue(parsing: line))?.object else {
                throw Failure(description: "\(path): an answer that is not a JSON object")
            }
            return response
        } catch {
            let failure = failure(error)
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
        do {
            while true { await line(try await nextLine()) }
        } catch {
            let failure = failure(error)
            close()
            throw failure
        }
    }

    /// Shuts the connection down, so a read waiting on it ends (with `reason`) as if the device had closed it. It
    /// holds until `close`: a channel interrupted before it connected, or between two reads, reads nothing more.
    func interrupt(_ reason: String) {
        interruption = reason
        if let socket { _ = Glibc.shutdown(socket.socket.file.rawValue, Int32(SHUT_RDWR)) }
    }

    /// `interrupt`, unless request number `request` has had its answer.
    private func interrupt(_ reason: String, ifStillWaitingFor request: Int) {
        if answered < request { interrupt(reason) }
    }

    /// Closes the connection; the next request opens a new one. Call only when no read waits on it (`interrupt`
    /// ends one).
    func close() {
        try? socket?.close()
        socket = nil
        pending = []
        interruption = nil
    }

    private func failure(_ error: any Error) -> Failure {
        if let interruption { return Failure(description: "\(path): \(interruption)") }
        if let failure = error as? Failure { return failure }
        // The system's words ("No such file or directory", "Connection refused"), not the error's Swift spelling.
        if case SocketError.failed(_, _, let message) = error { return Failure(description: "\(path): \(message)") }
        return Failure(description: "\(path): \(error)")
    }

    private func connected() async throws -> AsyncSocket {
        if let interruption { throw Failure(description: "\(path): \(interruption)") }
        if let socket { return socket }
        let socket = try await AsyncSocket.connected(to: sockaddr_un.unix(path: path), timeout: 5)
        self.socket = socket
        // Interrupted while connecting: the read to come must end too.
        if interruption != nil { _ = Glibc.shutdown(socket.socket.file.rawValue, Int32(SHUT_RDWR)) }
        return socket
    }

    /// The next line the device sent, without its newline.
    private func nextLine() async throws -> String {
        while true {
            if let interruption { throw Failure(description: "\(path): \(interruption)") }
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            guard let socket else { throw Failure(description: "\(path): not connected") }
            let bytes = try await socket.read(atMost: 65_536)
            guard !bytes.isEmpty else { throw Failure(description: "\(path): closed") }
            pending += bytes
        }
    }
}
