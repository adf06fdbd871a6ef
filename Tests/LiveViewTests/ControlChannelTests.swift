import Dispatch
import Foundation
import LocalIO
import Testing

@testable import LiveView

/// `ControlChannel` ends a read by shutting its socket down, never by cancelling it: a timeout, and an interrupt
/// before, during or between reads, each end it with their reason.
@Suite struct ControlChannelTests {
    /// A Unix socket listening at a fresh path; `answer` (if any) is written to the first connection after its first
    /// line, which is then held open and silent.
    private func listener(answering answer: String? = nil) throws -> (path: String, fd: Int32) {
        let path = "/tmp/blemu-channel-\(UUID().uuidString.prefix(8)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(SocketCalls.bindAndListen(fd, to: try #require(SocketCalls.unixAddress(path))))
        if let answer {
            // Its own descriptor for the same socket: the test closes `fd` when it ends, and another test's listener
            // can then get that number; an accept still waiting on the number would take that test's connection
            // and answer it (seen: a "never answers" test got this answer).
            let own = dup(fd)
            DispatchQueue.global().async {
                defer { close(own) }
                let connection = accept(own, nil, nil)
                var byte: UInt8 = 0
                while read(connection, &byte, 1) == 1 && byte != UInt8(ascii: "\n") {}
                let bytes = Array((answer + "\n").utf8)
                // MSG_NOSIGNAL: a channel that already ended its connection must cost this write, not the test
                // process (SIGPIPE kills it when nothing else in the run has ignored the signal).
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                // Held open: the stream stays silent until the channel ends it.
                while read(connection, &byte, 1) == 1 {}
                close(connection)
            }
        }
        return (path, fd)
    }

    @Test func aDeviceThatNeverAnswersIsATimeoutNamingIt() async throws {
        let (path, fd) = try listener()
        defer {
            close(fd)
            unlink(path)
        }
        let channel = ControlChannel(path: path)
        await #expect {
            try await channel.send(["command": .string("counters")], timeout: .milliseconds(300))
        } throws: { error in
            "\(error)" == "\(path): no answer within 0.3 seconds"
        }
    }

    @Test func anInterruptEndsAFollowThatIsWaitingForALine() async throws {
        // The response, then one event line: once the follow hands that line over it is past its response, and
        // the stream stays silent after it, so the follow is waiting for a line when the interrupt comes.
        let (path, fd) = try listener(answering: #"{"ok":true,"following":true}"# + "\n" + #"{"event":"first"}"#)
        defer {
            close(fd)
            unlink(path)
        }
        let channel = ControlChannel(path: path)
        let (lines, arrived) = AsyncStream<String>.makeStream()
        let following = Task {
            do {
                try await channel.follow(["command": .string("events"), "follow": .bool(true)]) { arrived.yield($0) }
                return "ended without a reason"
            } catch { return "\(error)" }
        }
        var iterator = lines.makeAsyncIterator()
        #expect(await iterator.next() == #"{"event":"first"}"#)
        await channel.interrupt("the view stopped following")
        #expect(await following.value == "\(path): the view stopped following")
    }

    @Test func anInterruptBeforeTheFirstRequestHolds() async throws {
        let (path, fd) = try listener(answering: #"{"ok":true,"following":true}"#)
        defer {
            close(fd)
            unlink(path)
        }
        let channel = ControlChannel(path: path)
        await channel.interrupt("no page is open")
        await #expect {
            try await channel.follow(["command": .string("events"), "follow": .bool(true)]) { _ in }
        } throws: { error in
            "\(error)" == "\(path): no page is open"
        }
    }
}
