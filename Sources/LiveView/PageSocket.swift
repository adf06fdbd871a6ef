import ControlProtocol
import Dispatch
import LocalIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One page's WebSocket, once upgraded: what the watcher sends goes to the page through a bounded `PageOutbox`,
/// written by a thread of its own, and what the page sends (commands) goes to the watcher, one at a time, read by
/// the connection's thread. When the page goes away the watcher forgets it at once, and the commands it left waiting
/// are not sent. A page that stops reading (a frozen tab, a half-open connection) costs its outbox's bound, never
/// more: it is closed when it falls that far behind, or when a write has waited `writeLimit`.
enum PageSocket {
    /// The longest message a page may send: its commands are a few hundred bytes.
    static let longestMessage = 64 * 1024
    /// Commands a page may have waiting behind the one being answered; past that it is told to wait.
    static let waitingCommands = 32
    /// How long one write to a page may wait for it to read.
    static let writeLimit: Int = 30

    /// Serves the page on `connection` until either side ends it; the caller closes the descriptor after.
    static func serve(_ connection: Int32, watcher: DeviceWatcher, pending: [UInt8]) {
        // A page may be silent for hours: no read timeout. A write waits at most `writeLimit` seconds.
        SocketCalls.setTimeout(.receive, of: connection, to: .zero)
        SocketCalls.setTimeout(.send, of: connection, to: .seconds(writeLimit))
        let outbox = PageOutbox(capacity: DeviceWatcher.pageBacklog)
        let written = DispatchSemaphore(value: 0)
        do {
            try DetachedThread.start {
                while let frame = outbox.next() {
                    guard SocketCalls.sendAll(connection, frame.bytes) else { break }
                }
                // Frames sent from now on are gone; the read below ends too.
                outbox.close()
                _ = shutdown(connection, Int32(SHUT_RDWR))
                written.signal()
            }
        } catch {
            return
        }
        let attached = Task { await watcher.attach(outbox) }
        let (commands, queue) = AsyncStream.makeStream(
            of: String.self, bufferingPolicy: .bufferingOldest(waitingCommands))
        let answering = Task {
            let id = await attached.value
            for await command in commands {
                if Task.isCancelled { break }
                await watcher.received(command, from: id)
            }
        }
        read(connection, pending: pending, outbox: outbox, queue: queue)
        queue.finish()
        answering.cancel()
        Task { await watcher.detach(await attached.value) }
        outbox.close()
        written.wait()
    }

    /// Reads the page's frames until it closes, breaks the protocol, or its connection ends.
    private static func read(
        _ connection: Int32, pending: [UInt8], outbox: PageOutbox, queue: AsyncStream<String>.Continuation
    ) {
        var frames = WebSocketFrameReader(longest: longestMessage)
        var messages = PageMessageReader(longest: longestMessage)
        frames.append(pending)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let next: WebSocketFrame?
            do { next = try frames.next() } catch {
                outbox.send(.close(code: error.code), last: true)
                return
            }
            guard let frame = next else {
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                frames.append(buffer[..<count])
                continue
            }
            switch messages.take(frame) {
            case .none: continue
            case .message(let text):
                if case .dropped = queue.yield(text) { outbox.send(DeviceWatcher.busyAnswer(to: text)) }
            case .reply(let frame): outbox.send(frame)
            case .close(let frame):
                outbox.send(frame, last: true)
                return
            }
        }
    }
}

/// The frames going to one page, at most `capacity` ahead of what its connection has written: a page that falls
/// further behind is closed rather than buffered for, and its script reconnects to a fresh snapshot. Filled by the
/// watcher and the page's reader, emptied by the page's writer thread, which waits on it.
final class PageOutbox: Sendable {
    /// What became of a frame.
    enum Delivery: Equatable {
        /// Queued for the page.
        case queued
        /// Not queued: the page is too far behind, and is closed now.
        case behind
        /// Not queued: the page's frames had ended already.
        case gone
    }

    private struct State {
        var frames: [WebSocketFrame] = []
        var first = 0
        var closed = false
    }

    /// The most frames queued at once.
    let capacity: Int
    private let state = Mutex(State())
    /// Signalled once per frame queued and once at the close: the writer's one way to wait.
    private let available = DispatchSemaphore(value: 0)

    /// An empty outbox holding at most `capacity` frames.
    init(capacity: Int) { self.capacity = capacity }

    /// Queues `text` as one text frame.
    @discardableResult
    func send(_ text: String) -> Delivery { send(.text(text)) }

    /// Queues `frame`; a page too far behind is closed. With `last` (a Close frame), the outbox closes behind it in
    /// the same step, so nothing the watcher sends can follow it (RFC 6455 section 5.5.1).
    @discardableResult
    func send(_ frame: WebSocketFrame, last: Bool = false) -> Delivery {
        let delivery = state.withLock { state -> Delivery in
            if state.closed { return .gone }
            if state.frames.count - state.first >= capacity {
                state.closed = true
                return .behind
            }
            state.frames.append(frame)
            state.closed = last
            return .queued
        }
        if delivery != .gone { available.signal() }
        // The close that `last` made is a signal of its own, as `close()` gives: the writer sees the end after the frame.
        if delivery == .queued && last { available.signal() }
        return delivery
    }

    /// Ends the page's frames: its connection closes once the frames already queued are written.
    func close() {
        let closing = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if closing { available.signal() }
    }

    /// The next frame to write, waiting for one; nil once the outbox is closed and empty (and at every call after).
    func next() -> WebSocketFrame? {
        while true {
            available.wait()
            let frame = state.withLock { state -> WebSocketFrame?? in
                if state.first < state.frames.count {
                    let frame = state.frames[state.first]
                    state.first += 1
                    // Compact now and then, so the array does not keep every frame ever sent.
                    if state.first >= 1024 && state.first * 2 >= state.frames.count {
                        state.frames.removeFirst(state.first)
                        state.first = 0
                    }
                    return .some(frame)
                }
                return state.closed ? .some(nil) : nil
            }
            guard let frame else { continue }
            // The close's signal stays for the next call, which must see the end too.
            if frame == nil { available.signal() }
            return frame
        }
    }
}

/// Reads a page's frames into whole text messages, and answers the control frames (RFC 6455 section 5.5).
struct PageMessageReader {
    /// What one frame makes.
    enum Outcome: Equatable {
        /// Nothing yet (a fragment, a pong).
        case none
        /// A whole text message.
        case message(String)
        /// A frame to send back (a ping's pong).
        case reply(WebSocketFrame)
        /// The closing frame to send back, after which the connection ends.
        case close(WebSocketFrame)
    }

    private let longest: Int
    private var fragments: [UInt8]?

    /// A reader that refuses messages longer than `longest` bytes.
    init(longest: Int) { self.longest = longest }

    /// What `frame` makes, given the fragments before it.
    mutating func take(_ frame: WebSocketFrame) -> Outcome {
        switch frame.opcode {
        case .text, .continuation:
            if frame.opcode == .text ? fragments != nil : fragments == nil {
                // A new message inside one, or a stray continuation.
                return .close(.close(code: WebSocketFrame.CloseCode.protocolError))
            }
            let message = (fragments ?? []) + frame.payload
            guard message.count <= longest else {
                fragments = nil
                return .close(.close(code: WebSocketFrame.CloseCode.messageTooBig, reason: "Message Too Big"))
            }
            guard frame.fin else {
                fragments = message
                return .none
            }
            fragments = nil
            // A text message must be UTF-8 (section 8.1); a page that sends otherwise is closed with 1007.
            guard let text = String(validating: message, as: UTF8.self) else {
                return .close(.close(code: WebSocketFrame.CloseCode.invalidData))
            }
            return .message(text)
        case .ping:
            return .reply(WebSocketFrame(fin: true, opcode: .pong, payload: frame.payload))
        case .pong:
            return .none
        case .close:
            // Echo the status code, as RFC 6455 section 5.5.1 asks: none when none came, 1002 for one a peer may not
            // send (section 7.4: under 1000, 1004 to 1006, 1015, 1016 to 2999) or a one-byte body.
            guard !frame.payload.isEmpty else { return .close(WebSocketFrame(fin: true, opcode: .close, payload: [])) }
            let code = frame.payload.count >= 2 ? UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]) : 0
            guard (1000...1003).contains(code) || (1007...1014).contains(code) || (3000...4999).contains(code) else {
                return .close(.close(code: WebSocketFrame.CloseCode.protocolError))
            }
            return .close(WebSocketFrame(fin: true, opcode: .close, payload: Array(frame.payload.prefix(2))))
        case .binary:
            // Binary frames: the page sends none.
            return .close(.close(code: WebSocketFrame.CloseCode.unsupportedData))
        }
    }
}
