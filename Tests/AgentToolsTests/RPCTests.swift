import ControlProtocol
import Glibc
import Testing

@testable import AgentTools

/// MCP's JSON-RPC as a client meets it: `AgentToolServer.serve` on a pair of pipes, one line a message, each answer
/// read back as the client reads it.
@Suite(.timeLimit(.minutes(1)))
struct RPCTests {
    /// The server on pipes: `send` writes a client line, `next` reads the server's next line as JSON.
    final class Session {
        private let toServer: Int32
        private var lines: AsyncStream<LineFramer.Line>.Iterator
        private let serving: Task<Void, Never>

        init(_ server: AgentToolServer) {
            var input: [Int32] = [0, 0]
            var output: [Int32] = [0, 0]
            _ = pipe(&input)
            _ = pipe(&output)
            toServer = input[1]
            let (serverIn, serverOut) = (input[0], output[1])
            serving = Task {
                await server.serve(input: serverIn, output: serverOut)
                close(serverIn)
                close(serverOut)
            }
            lines = StdioChannel(input: output[0], output: -1).lines().makeAsyncIterator()
        }

        /// Writes `line` as the client's next message.
        func send(_ line: String) {
            let bytes = Array((line + "\n").utf8)
            #expect(write(toServer, bytes, bytes.count) == bytes.count)
        }

        /// The server's next line, parsed; nil when its output ended.
        func next() async throws -> JSONValue? {
            guard case .line(let line)? = await lines.next() else { return nil }
            return try JSONValue(parsing: line)
        }

        /// Closes the client's end of standard input; the server's output then ends.
        func end() async -> JSONValue? {
            close(toServer)
            await serving.value
            return try? await next()
        }
    }

    static func server() -> AgentToolServer {
        AgentToolServer(
            control: "/tmp/blemu-rpc-absent.sock", version: "blemu 9.9 (test)", logger: ControlledDevice.logger)
    }

    @Test func theHandshakeAgreesOnAVersionAndNamesTheServer() async throws {
        let session = Session(Self.server())
        session.send(
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
        )
        let answer = try #require(try await session.next())
        #expect(answer["id"] == 1 && answer["jsonrpc"] == "2.0", "\(answer.text)")
        #expect(answer["result"]?["protocolVersion"] == "2025-06-18", "\(answer.text)")
        #expect(answer["result"]?["serverInfo"]?["name"] == "blemu", "\(answer.text)")
        #expect(answer["result"]?["serverInfo"]?["version"] == "blemu 9.9 (test)", "\(answer.text)")
        #expect(answer["result"]?["capabilities"]?["tools"] != nil, "\(answer.text)")
        // A version this server does not speak: it offers its newest, and the client decides.
        session.send(#"{"jsonrpc":"2.0","id":"again","method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#)
        let other = try #require(try await session.next())
        #expect(other["id"] == "again" && other["result"]?["protocolVersion"] == "2025-11-25", "\(other.text)")
        #expect(await session.end() == nil)
    }

    @Test func notificationsAreNotAnsweredAndRequestsAreUnderTheirOwnId() async throws {
        let session = Session(Self.server())
        session.send(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        session.send(#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#)
        // Malformed, but a notification still: never answered (JSON-RPC 2.0 section 4.1).
        session.send(#"{"jsonrpc":"2.0","method":"notifications/progress","params":[1]}"#)
        session.send(#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        // The first line out is the ping's: no notification was answered.
        #expect(try await session.next() == ["jsonrpc": "2.0", "id": "p", "result": [:]])
        session.send(#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#)
        let tools = try #require(try await session.next())
        #expect(tools["result"]?["tools"]?.array?.count == AgentTool.allCases.count, "\(tools.text)")
        #expect(await session.end() == nil)
    }

    @Test func eachMalformedLineIsAnsweredWithItsErrorAndTheServerReadsOn() async throws {
        let session = Session(Self.server())
        let cases: [(String, JSONValue, Int64)] = [
            (#"{"jsonrpc":"2.0","id":1,"method":"#, .null, -32700),
            (#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#, .null, -32600),
            (#"{"id":3,"method":"ping"}"#, 3, -32600),
            (#"{"jsonrpc":"2.0","id":4,"method":7}"#, 4, -32600),
            (#"{"jsonrpc":"2.0","id":5,"method":"ping","params":[1]}"#, 5, -32602),
            (#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, .null, -32600),
            (#"{"jsonrpc":"2.0","id":6,"method":"sampling/createMessage"}"#, 6, -32601),
            (#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}"#, 7, -32602),
            (#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get","arguments":[1]}}"#, 8, -32602),
            (#"{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"blemu://nothing"}}"#, 9, -32602),
            (#"{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"blemu://profile"}}"#, 10, -32603),
        ]
        for (line, id, code) in cases {
            session.send(line)
            let answer = try #require(try await session.next(), "\(line)")
            #expect(answer["id"] == id && answer["error"]?["code"] == .integer(code), "\(line) -> \(answer.text)")
            #expect((answer["error"]?["message"]?.string ?? "").count > 5, "\(answer.text)")
        }
        #expect(await session.end() == nil)
    }

    @Test func aWaitSaysWhenItListensThenAnswersTheEvent() async throws {
        let device = try await ControlledDevice.start()
        let session = Session(device.tools)
        session.send(
            #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_event","arguments":{"type":"notification","characteristic":"battery-level","timeout_seconds":20},"_meta":{"progressToken":"w"}}}"#
        )
        let progress = try #require(try await session.next())
        #expect(progress["method"] == "notifications/progress" && progress["id"] == nil, "\(progress.text)")
        #expect(progress["params"]?["progressToken"] == "w" && progress["params"]?["progress"] == 0, "\(progress.text)")
        // Listening: what it waits for can come now.
        session.send(
            #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify","arguments":{"id":"battery-level"}}}"#
        )
        var answers: [JSONValue: JSONValue] = [:]
        while answers.count < 2, let line = try await session.next() { answers[line["id"] ?? .null] = line["result"] }
        #expect(answers[2]?["isError"] == false, "\(answers)")
        #expect(answers[1]?["isError"] == false, "\(answers)")
        #expect(answers[1]?["structuredContent"]?["type"] == "notification", "\(answers)")
        #expect(answers[1]?["content"]?.array?.first?["type"] == "text", "\(answers)")
        #expect(await session.end() == nil)
        await device.stop()
    }

    @Test func aCancelledCallIsNotAnsweredAndALateCancellationConcernsNothing() {
        let calls = CallTable()
        calls.begin(1)
        calls.cancel(1)
        #expect(calls.end(1) == false)
        calls.cancel(2)
        calls.begin(2)
        #expect(calls.end(2) == true)
        calls.begin("a")
        #expect(calls.end("a") == true)
    }
}
