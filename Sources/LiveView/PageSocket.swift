import FlyingFox
import Foundation

/// One page's WebSocket, frame by frame: what the watcher sends goes to the page through a bounded `PageOutbox`, and
/// what the page sends (commands) goes to the watcher, one at a time. When the page goes away the watcher forgets it
/// at once, and the commands it left waiting are not sent.
///
/// Frames rather than FlyingFox's messages (`MessageFrameWSHandler`): that handler copies outgoing messages into a
/// stream of its own with no bound as fast as they come, so a page that stops reading (a frozen tab, a half-open
/// connection) would hold the view's memory for as long as the device keeps talking. Here the connection's writer
/// pulls each frame from the page's own bounded stream as it writes (FlyingFox `HTTPConnection.switchToWebSocket`).
struct PageSocket: WSHandler {
    /// The device's watcher, shared by every page.
    let watcher: DeviceWatcher

    /// The longest message a page may send: its commands are a few hundred bytes.
    static let longestMessage = 64 * 1024
    /// Commands a page may have waiting behind the one being answered; past that it is told to wait.
    static let waitingCommands = 32

    func makeFrames(for client: AsyncThrowingStream<WSFrame, any Error>) async throws -> AsyncStream<WSFrame> {
        let (frames, continuation) = AsyncStream.makeStream(
            of: WSFrame.self, bufferingPolicy: .bufferingOldest(DeviceWatcher.pageBacklog))
        let outbox = PageOutbox(continuation: continuation)
        let id = await watcher.attach(outbox)
        let watcher = watcher
        Task {
            let (commands, queue) = AsyncStream.makeStream(
                of: String.self, bufferingPolicy: .bufferingOldest(Self.waitingCommands))
            let answering = Task {
                for await command in commands {
                    if Task.isCancelled { break }
                    await watcher.received(command, from: id)
                }
            }
            var reader = PageMessageReader(longest: Self.longestMessage)
            do {
                reading: for try await frame in client {
                    switch reader.take(frame) {
                    case .none: continue
                    case .message(let text):
                        if case .dropped = queue.yield(text) { await watcher.refuseBusy(text, to: id) }
                    case .reply(let frame): outbox.send(frame)
                    case .close(let frame):
                        outbox.send(frame)
                        outbox.close()
                        break reading
                    }
                }
            } catch {
                // A frame that does not decode: the connection ends as if the page had gone.
            }
            queue.finish()
            answering.cancel()
            await watcher.detach(id)
        }
        return frames
    }
}

/// The frames going to one page, at most `DeviceWatcher.pageBacklog` ahead of what its connection has written: a
/// page that falls further behind is closed rather than buffered for, and its script reconnects to a fresh snapshot.
struct PageOutbox: Sendable {
    let continuation: AsyncStream<WSFrame>.Continuation

    /// What became of a frame.
    enum Delivery: Equatable {
        /// Queued for the page.
        case queued
        /// Not queued: the page is too far behind, and is closed now.
        case behind
        /// Not queued: the page's frames had ended already.
        case gone
    }

    /// Queues `text` as one text frame.
    @discardableResult
    func send(_ text: String) -> Delivery {
        send(WSFrame(fin: true, opcode: .text, mask: nil, payload: Data(text.utf8)))
    }

    /// Queues `frame`; a page too far behind is closed.
    @discardableResult
    func send(_ frame: WSFrame) -> Delivery {
        switch continuation.yield(frame) {
        case .enqueued: return .queued
        case .terminated: return .gone
        case .dropped:
            continuation.finish()
            return .behind
        @unknown default:
            continuation.finish()
            return .gone
        }
    }

    /// Ends the page's frames: its connection closes once the frames already queued are written.
    func close() { continuation.finish() }
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
        case reply(WSFrame)
        /// The closing frame to send back, after which the connection ends.
        case close(WSFrame)
    }

    private let longest: Int
    private var fragments: Data?

    /// A reader that refuses messages longer than `longest` bytes.
    init(longest: Int) { self.longest = longest }

    /// What `frame` makes, given the fragments before it.
    mutating func take(_ frame: WSFrame) -> Outcome {
        switch frame.opcode {
        case .text, .continuation:
            if frame.opcode == .text ? fragments != nil : fragments == nil {
                return .close(.close(code: .protocolError))  // a new message inside one, or a stray continuation
            }
            let message = (fragments ?? Data()) + frame.payload
            guard message.count <= longest else {
                fragments = nil
                return .close(.close(code: WSCloseCode(1009, reason: "Message Too Big")))
            }
            guard frame.fin else {
                fragments = message
                return .none
            }
            fragments = nil
            return .message(String(decoding: message, as: UTF8.self))
        case .ping:
            return .reply(WSFrame(fin: true, opcode: .pong, mask: nil, payload: frame.payload))
        case .pong:
            return .none
        case .close:
            // Echo the status code, as RFC 6455 section 5.5.1 asks.
            return .close(WSFrame(fin: true, opcode: .close, mask: nil, payload: frame.payload.prefix(2)))
        default:
            // Binary frames: the page sends none.
            return .close(.close(code: .unsupportedData))
        }
    }
}
