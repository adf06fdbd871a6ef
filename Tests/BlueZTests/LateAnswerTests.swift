import BlueZTesting
import GATTModel
import Peripheral
import PeripheralTesting
import Testing

@testable import BlueZ

/// A handler slower than the deadline: it holds each read until the test lets it go, then answers it.
private final class HeldReads: RequestHandler {
    private let released: AsyncStream<Void>
    /// Lets the held read answer.
    let release: AsyncStream<Void>.Continuation

    init() { (released, release) = AsyncStream.makeStream() }

    func handleRead(_ request: consuming ReadRequest) async {
        for await _ in released { break }
        request.respond(with: [0x01])
    }

    func handleWrites(_ requests: consuming WriteRequests) async { requests.reject(.writeNotPermitted) }
}

/// The D-Bus call of a request goes to whoever answers first: after the deadline answered, the handler's late
/// answer has no call left to reply to, so bluetoothd gets exactly one answer and the call is never dropped.
@Suite struct LateAnswerTests {
    @Test func aReadTheDeadlineAnsweredGetsNoSecondReplyFromTheHandler() async throws {
        let clock = ManualClock()
        let handler = HeldReads()
        let rig = try await BackendRig(HeartRate.service, handler: handler, clock: clock)
        let central = try await rig.fake.connect(address: "11:22:33:44:55:01")
        let before = rig.backend.connection.statistics
        async let read = rig.fake.read("2a38", by: central)
        #expect(await rig.manager.requestCounts(within: .seconds(5)) { $0.requests == 1 })
        clock.advance(by: .seconds(5))
        // The deadline's Unlikely Error has no BlueZ spelling: an error name bluetoothd does not know, sent as 0x0E.
        #expect(await read == .failure(.unlikelyError))
        handler.release.yield()
        #expect(await rig.manager.requestCounts(within: .seconds(5)) { $0.refusedLate == 1 })
        let counts = rig.manager.requestCounts
        #expect(counts.requests == 1 && counts.expired == 1 && counts.answered == 1)
        let errors = await rig.fake.errorsFromApp
        #expect(errors == [BlueZErrorReply(for: .unlikelyError, operation: .read).name: 1], "\(errors)")
        let after = rig.backend.connection.statistics
        #expect(after.callsAnswered - before.callsAnswered == after.callsReceived - before.callsReceived)
        #expect(after.repliesSent - before.repliesSent == 1)
        #expect(after.droppedCalls == before.droppedCalls)
        await rig.stop()
    }
}
