import Emulation
import FlyingSocks
import Foundation

/// The control protocol's JSON (FlyingFox has a type of the same name).
typealias JSONValue = Emulation.JSONValue

/// One connection to a device's control socket (docs/control-and-events.md): request lines out, one response line
/// back for each, in order. Async on FlyingSocks' pool, so waiting on the device holds no thread; the server keeps
/// such a connection open between requests (a silent one is closed after 300 s, which polling never reaches).
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

    /// A channel to the socket at `path`; it connects at the first request.
    init(path: String) { self.path = path }

    /// Sends `request` and returns the response object. Throws `Failure` when the socket cannot be reached, closes,
    /// or takes longer than `timeout` (the connection is then dropped: a late answer must not answer the next one).
    func send(
        _ request: [String: JSONValue], timeout: Duration = .seconds(10)
    ) async throws(Failure) -> [String: JSONValue] {
        do {
            let socket = try await connected()
            try await socket.write(Data((JSONValue.object(request).text + "\n").utf8))
            let line = try await withTimeout(timeout) { try await self.nextLine() }
            guard let response = (try? JSONValue(parsing: line))?.object else {
                throw Failure(description: "\(path): an answer that is not a JSON object")
            }
            return response
        } catch let failure as Failure {
            close()
            throw failure
        } catch {
            close()
            throw Failure(description: "\(path): \(error)")
        }
    }

    /// Sends `request` (`events` with `follow`) and hands each line after the response to `line`, until the device
    /// closes the stream, the task is cancelled, or reading fails. Throws `Failure` when it cannot start or ends.
    func follow(_ request: [String: JSONValue], line: @Sendable (String) async -> Void) async throws(Failure) {
        let first = try await send(request)
        guard first["ok"] == .bool(true) else {
            throw Failure(description: "\(path): \(first["error"]?.string ?? "refused")")
        }
        do {
            while !Task.isCancelled { await line(try await nextLine()) }
        } catch {
            close()
            throw Failure(description: "\(path): the event stream ended (\(error))")
        }
        close()
    }

    /// Closes the connection; the next request opens a new one.
    func close() {
        try? socket?.close()
        socket = nil
        pending = []
    }

    private func connected() async throws -> AsyncSocket {
        if let socket { return socket }
        let socket = try await AsyncSocket.connected(to: sockaddr_un.unix(path: path), timeout: 5)
        self.socket = socket
        return socket
    }

    /// The next line the device sent, without its newline.
    private func nextLine() async throws -> String {
        while true {
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

/// Runs `body`, or throws `ControlChannel.Failure` when it takes longer than `limit` (the body is cancelled).
func withTimeout<T: Sendable>(
    _ limit: Duration, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw ControlChannel.Failure(description: "no answer within \(limit)")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
