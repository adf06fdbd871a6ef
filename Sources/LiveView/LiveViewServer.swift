import ControlProtocol
import Dispatch
import LocalIO
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `blemu ui`'s server: the page, and a WebSocket per page that follows one device through its control socket
/// (docs/live-view.md). It needs nothing but the socket, so it runs beside any `blemu run`, in the lab or not.
///
/// HTTP/1.1 and WebSocket on POSIX sockets, a thread per connection (`ViewConnection`): a page on loopback needs GET
/// for four files and one WebSocket, which is a few hundred lines here, where a server library (FlyingFox, then)
/// brought swift-corelibs-foundation's ICU data and libcurl into the binary (docs/install.md, "Size").
public struct LiveViewServer: Sendable {
    /// Why the view could not start listening, or stopped.
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
    /// when the address cannot be bound, or connections can no longer be accepted there (out of descriptors).
    public func run(listening: @escaping @Sendable (UInt16) -> Void) async throws {
        let listener: ViewListener
        do { listener = try ViewListener(address) } catch {
            throw ListenError(description: "cannot listen on \(address): \(error)")
        }
        listening(listener.port)
        let handler = ViewHandler(access: access, port: listener.port, watcher: watcher)
        let failure = await withTaskCancellationHandler {
            await withCheckedContinuation { (ended: CheckedContinuation<String?, Never>) in
                listener.accept(
                    serving: { connection in ViewConnection.serve(connection, handler: handler) },
                    ended: { ended.resume(returning: $0) })
            }
        } onCancel: {
            listener.stop()
        }
        if let failure {
            throw ListenError(description: "stopped accepting connections on \(address): \(failure)")
        }
    }
}

/// Every request: refused unless `ViewAccess` lets it through, then the page's files or the WebSocket.
struct ViewHandler: Sendable {
    let access: ViewAccess
    /// The port listened on: the Host a browser sends carries it, so the access checks need it.
    let port: UInt16
    let watcher: DeviceWatcher

    /// What a request gets.
    enum Reply {
        /// This response, then the connection closes.
        case response(HTTPResponse)
        /// The WebSocket handshake, then the page's socket.
        case webSocket
    }

    /// The reply to `request`.
    func reply(to request: HTTPRequestHead) -> Reply {
        if let refusal = access.refusal(for: request, port: port) { return .response(.text(403, refusal.rawValue)) }
        guard request.method == "GET" else {
            return .response(HTTPResponse(status: 405, fields: [("Allow", "GET")]))
        }
        if request.path == "/ws" { return .webSocket }
        guard let file = PageFiles.file(at: request.path) else { return .response(HTTPResponse(status: 404)) }
        var fields = [
            ("Content-Type", file.contentType), ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
            // Only the view's own scripts and styles, no framing by another page (clickjacking its controls).
            ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
            ("Referrer-Policy", "no-referrer"),
        ]
        if let cookie = access.cookie(for: request, port: port) { fields.append(("Set-Cookie", cookie)) }
        return .response(HTTPResponse(status: 200, fields: fields, body: file.body))
    }
}
