import ControlProtocol
import LocalIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// MCP's stdio transport (MCP 2025-06-18, "Transports"): messages are lines of JSON on the server's standard input,
/// answers lines on its standard output, nothing else on either.
final class StdioChannel: Sendable {
    /// The longest line read: a tool call's arguments are small, and a line without an end must not grow forever.
    static let longestLine = 4 << 20

    private let input: Int32
    private let output: Int32
    /// Held while a line is written, so two answers written at once never interleave; true once a write found
    /// the client no longer reading.
    private let writing = Mutex(false)
    /// Called once, with the reason, on the first write that fails (EPIPE when the client no longer reads).
    private let outputClosed: @Sendable (String) -> Void

    /// A channel reading `input` and writing `output` (standard input and output for `blemu mcp`); `outputClosed`
    /// is told once, with the reason, when a write first fails.
    init(input: Int32, output: Int32, outputClosed: @escaping @Sendable (String) -> Void = { _ in }) {
        self.input = input
        self.output = output
        self.outputClosed = outputClosed
    }

    /// The lines of `input` until it ends or fails, read on a thread of their own (a blocking read must not hold a
    /// thread of the cooperative pool). Unbounded: its one reader only starts a task for each line.
    func lines() -> AsyncStream<LineFramer.Line> {
        let input = input
        return AsyncStream { continuation in
            let reading: @Sendable () -> Void = {
                var framer = LineFramer(maximumLength: Self.longestLine)
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                        // A non-blocking standard input (its open file shared with a parent that set O_NONBLOCK):
                        // wait until it has something, rather than take "nothing yet" for its end.
                        var ready = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
                        _ = poll(&ready, 1, -1)
                        continue
                    }
                    guard count > 0 else { break }
                    for line in framer.append(buffer[..<count]) { continuation.yield(line) }
                }
                continuation.finish()
            }
            // No thread to read on (the process's limit): no line will come, so the lines end now.
            do { try DetachedThread.start(reading) } catch { continuation.finish() }
        }
    }

    /// Writes `line` and its newline, waiting while a non-blocking standard output is full (the client reads slower
    /// than the answers come); false when the write fails, as every one does once the client no longer reads (EPIPE:
    /// SIGPIPE is ignored by `blemu mcp`'s main): its answers are then dropped while its requests are still read.
    @discardableResult
    func send(_ line: String) -> Bool {
        // The first failure's reason is told after the lock is let go: `outputClosed` may take its own.
        let (sent, firstFailure) = writing.withLock { hasFailed -> (Bool, LocalFile.WriteError?) in
            do throws(LocalFile.WriteError) {
                try LocalFile.writeAll(Array((line + "\n").utf8), to: output, waitingWhenFull: true)
                return (true, nil)
            } catch {
                defer { hasFailed = true }
                return (false, hasFailed ? nil : error)
            }
        }
        if let firstFailure { outputClosed(firstFailure.description) }
        return sent
    }
}
