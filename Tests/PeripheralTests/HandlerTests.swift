import GATTModel
import Peripheral
import PeripheralTesting
import Testing

/// Handlers that misbehave: the engine still answers every request exactly once.
@Suite struct HandlerTests {
    /// Forgets every read: each request is dropped at the end of `handleRead`.
    struct ForgetfulHandler: RequestHandler {
        func handleRead(_ request: consuming ReadRequest) async {}
        func handleWrites(_ requests: consuming WriteRequests) async { await ProfileServer().handleWrites(requests) }
    }

    /// Answers reads only when the test opens the gate, and reports what became of the answer.
    struct GatedHandler: RequestHandler {
        let gate: AsyncStream<Void>
        let outcomes: AsyncStream<AnswerDelivery>.Continuation

        func handleRead(_ request: consuming ReadRequest) async {
            for await _ in gate { break }
            outcomes.yield(request.respond(with: [1]))
        }
        func handleWrites(_ requests: consuming WriteRequests) async { requests.reject(.requestNotSupported) }
    }

    @Test func aDroppedRequestIsAnsweredWithUnlikelyError() async throws {
        let (manager, backend) = try await PeripheralManager.inMemory(
            publishing: [Fixture.service], handler: ForgetfulHandler())
        let phone = VirtualCentral(connectingTo: backend)
        await #expect(throws: ATTError.unlikelyError) { try await phone.read("setting") }
        #expect(manager.requestCounts.dropped == 1)
        #expect(manager.requestCounts.outstanding == 0)
    }

    @Test func aRequestUnansweredAtItsDeadlineIsAnsweredByTheEngineAndTheLateAnswerRefused() async throws {
        let (gate, opener) = AsyncStream.makeStream(of: Void.self)
        let (outcomes, reporter) = AsyncStream.makeStream(of: AnswerDelivery.self)
        let clock = ManualClock()
        let (manager, backend) = try await PeripheralManager.inMemory(
            publishing: [Fixture.service], handler: GatedHandler(gate: gate, outcomes: reporter), clock: clock)
        let phone = VirtualCentral(connectingTo: backend)
        let read = Task { () async throws(ATTError) -> [UInt8] in try await phone.read("setting") }
        await clock.waitForSleepers()  // the deadline timer of the suspended request
        clock.advance(by: PeripheralManager.Configuration().requestDeadline)
        await #expect(throws: ATTError.unlikelyError) { try await read.value }
        opener.yield()
        var iterator = outcomes.makeAsyncIterator()
        #expect(await iterator.next() == .refused(alreadyAnsweredBy: .deadline))
        let counts = manager.requestCounts
        #expect(counts.expired == 1 && counts.refusedLate == 1 && counts.requests == counts.answered)
    }
}
