import FlyingFox
import FlyingSocks
import Foundation
import LocalIO
import Logging
import Synchronization

/// `blemu ui`'s server: the page, and a WebSocket per page that follows one device through its control socket
/// (docs/live-view.md). It needs nothing but the socket, so it runs beside any `blemu run`, in the lab or not.
///
/// Built on FlyingFox: HTTP/1.1 and WebSocket on plain POSIX sockets and Swift concurrency, a few thousand lines
/// with no dependency of its own. Hummingbird and SwiftNIO would serve as well, but a page on loopback needs none of
/// their event loops, and their first build costs CI minutes the lab's VMs already take.
public struct LiveViewServer: Sendable {
    /// Why the view could not start listening.
    public struct ListenError: Error, Sendable, CustomStringConvertible {
        /// The address and the system's reason.
        public var description: String
    }

    /// The control socket of the device to show.
    public let control: String
    /// Where to listen (port 0: a free one; `run` reports the one taken).
    public let address: ViewAddress
    /// The token every request must carry; nil only on loopback.
    public let token: String?
    private let access: ViewAccess
    private let watcher: DeviceWatcher
    private let logger: Logger

    /// A view of the device at `control`, listening on `address`. `token` is required beyond loopback: nil there
    /// makes a random one (print `url`). `extraHosts` are more `host:port` names the page may be opened under (a
    /// forwarded port). `eventLog` is the device's event log file, for a longer history than the socket keeps.
    public init(
        control: String, address: ViewAddress, token: String?, extraHosts: [String] = [], eventLog: String? = nil,
        logger: Logger
    ) {
        self.control = control
        self.address = address
        self.token = token ?? (address.isLoopback ? nil : RandomToken.make())
        self.logger = logger
        access = ViewAccess(address: address, token: self.token, extraHosts: extraHosts)
        watcher = DeviceWatcher(control: control, eventLog: eventLog, logger: logger)
    }

    /// The page's address, with `?token=` when it needs one, for the port actually listened on.
    public func url(port: UInt16) -> String {
        "http://\(address.with(port: port))/" + (token.map { "?token=\($0)" } ?? "")
    }

    /// Listens, calls `listening` with the port taken, and serves until the task is cancelled. Throws `ListenError`
    /// when the address cannot be bound, or connections can no longer be accepted there.
    public func run(listening: @escaping @Sendable (UInt16) -> Void) async throws {
        let socketAddress: any SocketAddress
        do { socketAddress = try address.socketAddress() } catch {
            throw ListenError(description: "cannot listen on \(address): \(error)")
        }
        let port = ListeningPort()
        let server = HTTPServer(
            config: HTTPServer.Configuration(address: socketAddress, timeout: 30, logger: .disabled),
            handler: ViewHandler(access: access, port: port, watcher: watcher))
        let address = address
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do { try await server.run() } catch {
                    guard !Task.isCancelled else { return }
                    if port.value == nil {
                        throw ListenError(description: "cannot listen on \(address): \(Self.reason(error))")
                    }
                    // FlyingFox ends the server on any accept error (out of descriptors: many idle connections).
                    throw ListenError(
                        description: "stopped accepting connections on \(address): \(Self.reason(error))")
                }
            }
            group.addTask {
                try await server.waitUntilListening(timeout: 30)
                let taken = await server.listeningAddress.flatMap(Self.port) ?? address.port
                port.value = taken
                listening(taken)
            }
            // The first error ends the group and cancels the rest: a port already taken must not wait out the
            // listening timeout.
            while try await group.next() != nil {}
        }
    }

    /// The system's words for a socket error ("Address already in use"), else the error as Swift prints it.
    private static func reason(_ error: any Error) -> String {
        if case SocketError.failed(_, _, let message) = error { return message }
        return "\(error)"
    }

    private static func port(of address: Socket.Address) -> UInt16? {
        switch address {
        case .ip4(_, let port), .ip6(_, let port): port
        default: nil
        }
    }
}

/// Every request: refused unless `ViewAccess` lets it through, then the page's files or the WebSocket.
struct ViewHandler: HTTPHandler {
    let access: ViewAccess
    let port: ListeningPort
    let watcher: DeviceWatcher

    func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let refusal = access.refusal(for: request, port: port.value ?? 0) {
            return HTTPResponse(
                statusCode: .forbidden, headers: [.contentType: "text/plain; charset=utf-8"],
                body: Data((refusal.rawValue + "\n").utf8))
        }
        guard request.method == .GET else {
            return HTTPResponse(statusCode: .methodNotAllowed, headers: HTTPHeaders([HTTPHeader("Allow"): "GET"]))
        }
        if request.path == "/ws" {
            return try await WebSocketHTTPHandler(handler: PageSocket(watcher: watcher)).handleRequest(request)
        }
        guard let file = PageFiles.file(at: request.path) else { return HTTPResponse(statusCode: .notFound) }
        var headers: [HTTPHeader: String] = [
            .contentType: file.contentType, .cacheControl: "no-store",
            HTTPHeader("X-Content-Type-Options"): "nosniff",
            // Only the view's own scripts and styles, no framing by another page (clickjacking its controls).
            HTTPHeader("Content-Security-Policy"):
                "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            HTTPHeader("Referrer-Policy"): "no-referrer",
        ]
        if let cookie = access.cookie(for: request, port: port.value ?? 0) { headers[.setCookie] = cookie }
        return HTTPResponse(statusCode: .ok, headers: HTTPHeaders(headers), body: Data(file.body))
    }
}

/// The port the view listens on, known once it listens (port 0 asks the system for one): the Host a browser sends
/// carries it, so the access checks need it.
final class ListeningPort: Sendable {
    private let port = Mutex<UInt16?>(nil)

    /// The port; nil until listening.
    var value: UInt16? {
        get { port.withLock { $0 } }
        set { port.withLock { $0 = newValue } }
    }
}
