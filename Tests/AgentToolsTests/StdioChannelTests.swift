import ControlProtocol
import Glibc
import Testing

@testable import AgentTools

/// MCP's stdio transport under what a client's process does to it: a standard output left non-blocking by a parent
/// (its open file is shared), and a client that reads slower than answers come.
@Suite(.timeLimit(.minutes(1)))
struct StdioChannelTests {
    @Test func anAnswerLongerThanAFullNonBlockingPipeArrivesWhole() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        // Far more than a pipe holds (64 KiB by default): the writer meets EAGAIN many times before the reader ends.
        let answer = String(repeating: "x", count: 1 << 20)
        let channel = StdioChannel(input: -1, output: ends[1])
        let sender = Task.detached { channel.send(answer) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while received.last != UInt8(ascii: "\n") {
            let count = chunk.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            received += chunk[..<count]
        }
        #expect(await sender.value, "the answer was written")
        #expect(received.count == answer.utf8.count + 1, "every byte and the newline, none dropped")
    }
}
