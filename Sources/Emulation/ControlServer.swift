import ControlProtocol
import GATTModel
import LocalIO
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The control socket of `blemu run --control PATH`: a Unix stream socket speaking JSON lines, one request object
/// per line and one response object per line (`ControlCommands` lists them). A bad line gets
/// `{"ok":false,"error":"..."}` and the connection stays open; nothing a client sends can stop the emulator.
/// `{"command":"events","follow":true}` turns its connection into a stream: `{"following":true,"ok":true}`, then
/// every event as the event log writes it, until the client closes the connection (`stream`). `{"command":"handle"}`
/// turns it into a handler's: request lines out, answer lines in (`handle`, `RequestHandlers`).
///
/// The blocking `accept` runs on a thread of its own, never on Swift's cooperative pool, whose few threads (two on a
/// two-core machine) the emulator needs. Each connection is a task: its socket is non-blocking, and it waits for
/// bytes or room on the `ReadinessLoop` (one thread polling every connection), then awaits each line's answer from
/// the emulator's actor, so no thread blocks on a connection or waits for an answer.
public final class ControlServer: Sendable {
    /// The socket's path.
    public let path: String
    private let commands: ControlCommands
    private let logger: Logger
    /// The listening socket (-1 when stopped), whether a thread accepts on it, and the open connections, so `stop()`
    /// can end them all.
    private let sockets = Mutex<(listener: Int32, accepting: Bool, connections: Set<Int32>)>((-1, false, []))
    /// Where the connections wait for their sockets, from `start()` to `stop()`.
    private let readiness = Mutex<ReadinessLoop?>(nil)
    /// How many connections are served at once; one more is answered with an error line and closed.
    public let maximumConnections: Int
    /// How long a connection may stay silent between requests, or leave an answer unread, before it is closed;
    /// zero or less, or over a year, is no limit.
    public let idleTimeout: Duration

    /// Connections served at once by default: far more than scripts and tests open, few enough that idle clients
    /// cannot use up the process's descriptors (1,024 by default).
    public static let defaultMaximumConnections = 64
    /// A silent connection is closed after this long by default: a test harness that keeps one open between steps
    /// sends a request well within it, and one that died never holds a slot for long.
    public static let defaultIdleTimeout: Duration = .seconds(300)

    /// A server for `emulator` at `path`; nothing happens until `start()`.
    public init(
        path: String, emulator: Emulator, maximumConnections: Int = ControlServer.defaultMaximumConnections,
        idleTimeout: Duration = ControlServer.defaultIdleTimeout, logger: Logger = Logger(label: "blemu.control")
    ) {
        self.path = path
        commands = ControlCommands(emulator: emulator)
        self.maximumConnections = max(1, maximumConnections)
        self.idleTimeout = idleTimeout
        self.logger = logger
    }

    /// Why the socket cannot be opened.
    public struct StartError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The path and the system's reason.
        public var description: String
    }

    /// Claims the path (`claim()`) unless that is done, then accepts connections on a thread. Throws `StartError`
    /// when the path cannot be claimed or no thread can be started.
    public func start() throws(StartError) {
        let claimed = sockets.withLock { $0.listener }
        let fd: Int32
        if claimed >= 0 { fd = claimed } else { fd = try bindAndListen() }
        sockets.withLock { $0.accepting = true }
        do {
            let loop = try ReadinessLoop()
            readiness.withLock { $0 = loop }
            do { try DetachedThread.start { [self] in acceptLoop(fd, loop) } } catch {
                loop.stop()
                throw error
            }
        } catch {
            readiness.withLock { $0 = nil }
            sockets.withLock { $0 = (-1, false, $0.connections) }
            SocketCalls.close(fd)
            unlink(path)
            throw StartError(description: "\(path): \(error)")
        }
        logger.info("control socket listening at \(path)")
    }

    /// Binds and listens without accepting yet, removing a stale socket file first (never a file that is not a
    /// socket, and never one a live server answers on). `blemu run` claims its path before it touches bluetoothd, so
    /// a second copy given a live path stops before it registers anything; a client that connects before `start()`
    /// waits in the backlog. The socket is 0600 whatever the umask: whoever can connect can drive the peripheral.
    /// Throws `StartError` when the path is too long, not a socket, served by another live process, or cannot be
    /// bound.
    public func claim() throws(StartError) { _ = try bindAndListen() }

    /// `claim()`'s work: returns the listening descriptor.
    private func bindAndListen() throws(StartError) -> Int32 {
        guard let address = SocketCalls.unixAddress(path) else {
            throw StartError(
                description: "\(path): longer than \(SocketCalls.longestUnixPath) bytes, too long for a Unix socket")
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFSOCK else {
                throw StartError(description: "\(path): exists and is not a socket; not removing it")
            }
            // A socket file survives the process that made it: a previous run that crashed left this one. One that
            // still answers belongs to a live instance, whose users would lose it.
            guard !Self.answers(address) else {
                throw StartError(description: "\(path): another blemu is serving this control socket; stop it first")
            }
            unlink(path)
        }
        // Close-on-exec, as every descriptor of the serving process: a child (`blemu run --ui`'s view, bluetoothd's
        // `--version`) must not hold the listener, or a client's connection, past blemu's closing it.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StartError(description: "socket: \(String(cString: strerror(errno)))") }
        // Linux gives the socket file the socket inode's mode less the umask (`unix_bind`): 0600 at most.
        _ = fchmod(fd, 0o600)
        guard SocketCalls.bindAndListen(fd, to: address, backlog: 8) else {
            let reason = String(cString: strerror(errno))
            SocketCalls.close(fd)
            throw StartError(description: "\(path): \(reason)")
        }
        sockets.withLock { $0.listener = fd }
        return fd
    }

    /// Stops accepting, ends every connection and removes the socket file.
    public func stop() {
        // shutdown wakes the thread blocked in accept, and each connection's task (its socket reads an end of file);
        // each closes its own descriptor, under this lock, so none is shut down here after its number was reused.
        // Stopping the loop ends any wait left. A path claimed and never served has no accepting thread to close
        // its listener.
        let (listener, accepting) = sockets.withLock { sockets in
            defer { sockets = (-1, false, []) }
            for connection in sockets.connections { shutdown(connection, Int32(SHUT_RDWR)) }
            return (sockets.listener, sockets.accepting)
        }
        if listener >= 0 {
            shutdown(listener, Int32(SHUT_RDWR))
            unlink(path)
            if !accepting { SocketCalls.close(listener) }
        }
        readiness.withLock { loop in
            loop?.stop()
            loop = nil
        }
    }

    /// Whether something accepts connections at `address` now.
    private static func answers(_ address: sockaddr_un) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { SocketCalls.close(probe) }
        return SocketCalls.connect(probe, to: address)
    }

    private func acceptLoop(_ listener: Int32, _ loop: ReadinessLoop) {
        while true {
            let connection = accept(listener, nil, nil)
            // Close-on-exec as the listener (accept4 is not in Glibc's Swift overlay).
            if connection >= 0 { _ = fcntl(connection, F_SETFD, FD_CLOEXEC) }
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                // Out of descriptors or memory (idle clients past RLIMIT_NOFILE): the pending connection waits
                // in the backlog; try again once some have closed, instead of never accepting again.
                if [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(errno) {
                    usleep(100_000)
                    if sockets.withLock({ $0.listener == listener }) { continue }
                }
                break
            }
            let admission = sockets.withLock { sockets -> Admission in
                guard sockets.listener == listener else { return .stopped }
                guard sockets.connections.count < maximumConnections else { return .full }
                sockets.connections.insert(connection)
                return .admitted
            }
            switch admission {
            case .stopped:
                SocketCalls.close(connection)
                SocketCalls.close(listener)
                return
            case .full:
                // Said, not silently dropped: the client learns why and can retry once others have closed.
                _ = reply(
                    #"{"error":"too many control connections (\#(maximumConnections) open); try again later","ok":false}"#
                        + "\n", to: connection)
                SocketCalls.close(connection)
                continue
            case .admitted:
                break
            }
            // Non-blocking from here: the connection's task waits on the loop, never in a call.
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            Task { await serve(Connection(descriptor: connection, loop: loop, idleTimeout: idleTimeout)) }
        }
        SocketCalls.close(listener)
    }

    private enum Admission { case admitted, full, stopped }

    /// The longest request line (`ControlCommand.maximumLineLength`): a `set` of a 512-byte value in hex is about
    /// 1 KiB, so this leaves room for any real request while a runaway client cannot make the server buffer without
    /// bound.
    public static let maximumLineLength = ControlCommand.maximumLineLength

    private func serve(_ connection: Connection) async {
        var framer = LineFramer(maximumLength: Self.maximumLineLength)
        var buffer = [UInt8](repeating: 0, count: 4096)
        // A silent client is closed after `idleTimeout`.
        reading: while let count = await connection.read(into: &buffer, idle: true) {
            for line in framer.append(buffer[..<count]) {
                let response: String
                switch line {
                case .line(let text):
                    let request = ControlCommands.request(in: text)
                    if let feed = commands.feedToFollow(request) {
                        await stream(feed, to: connection)
                        break reading
                    }
                    if let request, request["command"]?.string == ControlCommand.handle.rawValue {
                        await handle(request, on: connection, framer: framer)
                        break reading
                    }
                    response = await commands.respond(to: request)
                case .tooLong:
                    response =
                        #"{"error":"request line longer than \#(Self.maximumLineLength) bytes, ignored","ok":false}"#
                }
                guard await connection.write(response + "\n") else { break reading }
            }
        }
        // Closed under the lock `stop()` shuts connections down in: it never reaches a number reused meanwhile.
        sockets.withLock { sockets in
            sockets.connections.remove(connection.descriptor)
            SocketCalls.close(connection.descriptor)
        }
    }

    /// Streams every event recorded from now on to `connection`, one event-log line each, until the client closes
    /// it (or `stop()` shuts it down). The connection waits on the loop for its socket and the follower's pipe: an
    /// event wakes it, and what the client sends is read and ignored, so its end of file ends the stream. A client
    /// that reads too slowly loses events past the follower's backlog, told by a `lines-dropped` line; one that
    /// stops reading is waited for as long as it takes (a paused pager), not closed.
    private func stream(_ feed: EventFeed, to connection: Connection) async {
        let follower: EventFollower
        do { follower = try feed.follow() } catch {
            _ = await connection.write(#"{"error":"cannot follow the events: \#(error)","ok":false}"# + "\n")
            return
        }
        defer { feed.unfollow(follower) }
        guard await connection.write(#"{"following":true,"ok":true}"# + "\n") else { return }
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let outcome = await connection.loop.wait(
                for: .readable, on: [connection.descriptor, follower.wakeDescriptor])
            guard case .ready = outcome else { return }
            // Both, whichever woke the wait: a client that keeps sending must not starve the events. Nothing to read
            // is EAGAIN (the socket is non-blocking).
            let count = scratch.withUnsafeMutableBytes { read(connection.descriptor, $0.baseAddress, $0.count) }
            if count == 0 || (count < 0 && errno != EINTR && errno != EAGAIN) { return }
            let (records, dropped) = follower.take()
            var text = ""
            if dropped > 0 {
                text += EventLineEncoder.encode(EventRecord(time: .now, event: .linesDropped(dropped))) + "\n"
            }
            for record in records { text += EventLineEncoder.encode(record) + "\n" }
            if !text.isEmpty, !(await connection.write(text, patiently: true)) { return }
        }
    }

    /// Serves a handler (`RequestHandlers`): the claim's answer, then request lines out and answer lines in until
    /// either side closes. Every line out is sent whole or not at all, without waiting (`HandlerLine`): a handler
    /// that stops reading loses its connection, and its requests get the fallback at once, instead of the request
    /// path waiting on it. A silent handler is not closed: it may have nothing to answer for hours.
    private func handle(_ request: [String: JSONValue], on connection: Connection, framer: consuming LineFramer) async {
        let claim: RequestHandlers.Claim
        do { claim = try commands.claim(from: request) } catch {
            _ = await connection.write(#"{"error":\#(JSONValue.string(error.description).text),"ok":false}"# + "\n")
            return
        }
        let handlers = commands.emulator.requestHandlers
        let line = HandlerLine(connection.descriptor)
        // The claim's line goes first: a request for the new handler waits on the line's lock until it has gone.
        let attached = line.holding { send -> Int? in
            switch handlers.attach(claim, send: line.send) {
            // A claim line that cannot go has shut the connection down: the read below ends, and it is detached.
            case .success(let number):
                _ = send(ControlCommands.claimed(claim))
                return number
            case .failure(let error):
                _ = send(#"{"error":\#(JSONValue.string(error.description).text),"ok":false}"# + "\n")
                return nil
            }
        }
        // The descriptor is closed once this returns: no request line may reach it, or a connection reusing it.
        defer {
            line.invalidate()
            if let attached { handlers.detach(attached) }
        }
        guard let number = attached else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while let count = await connection.read(into: &buffer, idle: false) {
            for answer in framer.append(buffer[..<count]) {
                let complaint: String?
                switch answer {
                case .line(let text): complaint = handlers.receive(ControlCommands.request(in: text), from: number)
                case .tooLong:
                    complaint = handlers.refuse(nil, "answer line longer than \(Self.maximumLineLength) bytes, ignored")
                }
                if let complaint, !line.send(complaint + "\n") { return }
            }
        }
    }

    /// Writes the whole response; MSG_NOSIGNAL, so a client that hung up costs an error, not a SIGPIPE.
    private func reply(_ text: String, to connection: Int32) -> Bool { SocketCalls.sendAll(connection, text.utf8) }
}

/// Sends lines to a handler's connection, one at a time, each whole or not at all and never waiting: when the socket
/// has no room for the whole line (the handler stopped reading), the connection is shut down, which ends the
/// handler's connection task and gives its requests the fallback.
private final class HandlerLine: Sendable {
    private let connection: Mutex<Int32>

    init(_ connection: Int32) { self.connection = Mutex(connection) }

    /// Whether all of `text` went.
    @Sendable func send(_ text: String) -> Bool {
        connection.withLock { Self.send(text, on: &$0) }
    }

    /// Runs `body` with the line's lock held, handing it the sending function: what it sends goes before any other
    /// line.
    func holding<T>(_ body: ((String) -> Bool) -> T) -> T {
        connection.withLock { fd in body { Self.send($0, on: &fd) } }
    }

    /// No line goes out from now on: the descriptor is about to be closed, and its number may be reused.
    func invalidate() {
        connection.withLock { $0 = -1 }
    }

    private static func send(_ text: String, on fd: inout Int32) -> Bool {
        guard fd >= 0 else { return false }
        let bytes = Array(text.utf8)
        var result: Int
        repeat {
            result = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
        } while result < 0 && errno == EINTR
        guard result == bytes.count else {
            // Part of a line would garble the stream; none means the handler is not reading. Either way it is
            // done: the connection's reading task sees the shutdown and detaches it.
            shutdown(fd, Int32(SHUT_RDWR))
            fd = -1
            return false
        }
        return true
    }
}

/// A connection's non-blocking socket and the loop it waits on: reads that wait for bytes (at most `idleTimeout`
/// when the client owes a request) and writes that wait for room (at most `idleTimeout`, unless patient: a client
/// that stops reading its answers is closed, not waited on for ever).
private struct Connection: Sendable {
    let descriptor: Int32
    let loop: ReadinessLoop
    let idleTimeout: Duration

    /// Reads what has arrived into `buffer`, waiting for it on the loop; the count, or nil at the end of the file,
    /// an error, the idle timeout (when `idle`) or the loop's stop.
    func read(into buffer: inout [UInt8], idle: Bool) async -> Int? {
        let deadline = idle ? idleDeadline : nil
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { return count }
            if count == 0 { return nil }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK,
                case .ready = await loop.wait(for: .readable, on: [descriptor], until: deadline)
            else { return nil }
        }
    }

    /// The moment an idle wait that starts now ends; nil for no limit (`ControlServer.idleTimeout`).
    private var idleDeadline: ContinuousClock.Instant? {
        guard idleTimeout > .zero, idleTimeout <= .seconds(366 * 86_400) else { return nil }
        return .now + idleTimeout
    }

    /// Writes all of `text`, waiting on the loop for room (at most `idleTimeout` each time unless `patiently`);
    /// MSG_NOSIGNAL, so a client that hung up costs an error, not a SIGPIPE. False when it could not all go.
    func write(_ text: String, patiently: Bool = false) async -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if count > 0 {
                sent += count
                continue
            }
            if count < 0 && errno == EINTR { continue }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK,
                case .ready = await loop.wait(for: .writable, on: [descriptor], until: patiently ? nil : idleDeadline)
            else { return false }
        }
        return true
    }
}
