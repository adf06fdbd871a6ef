import GATTModel
import Logging
import PeripheralTesting
import Synchronization
import Testing

@_spi(Backend) @testable import Peripheral

/// Level 1: requests answered exactly once, with no manager and no backend: the replies land in a stream.
@Suite struct RequestTests {
    let ledger = RequestLedger()
    let replies: AsyncStream<Result<[UInt8], ATTError>>
    let sink: AsyncStream<Result<[UInt8], ATTError>>.Continuation
    let central = Central(id: "central", attMTU: 23)
    let characteristic = Characteristic(
        id: "name", uuid: BluetoothUUID(0x2A00), properties: [.read, .write], value: .dynamic([]), maximumLength: 8)

    /// Deadlines of 10 s on a clock the tests advance.
    let clock = ManualClock()
    let deadlines: DeadlineQueue

    init() {
        (replies, sink) = AsyncStream.makeStream()
        deadlines = DeadlineQueue(duration: .seconds(10), error: .unlikelyError, clock: ElapsedClock(clock))
    }

    func responder(expectsReply: Bool = true) -> Responder {
        let sink = sink
        let reply: @Sendable (Result<[UInt8], ATTError>) -> Void = { sink.yield($0) }
        return Responder(
            summary: "test request", reply: expectsReply ? ClosureReply(reply) : nil, ledger: ledger,
            logger: Logger.quiet)
    }

    func read(offset: Int = 0) -> ReadRequest {
        ReadRequest(
            central: central, characteristic: characteristic, offset: offset, linkSecurity: .none,
            responder: responder())
    }

    func writes(_ requests: [WriteRequest]) -> WriteRequests {
        WriteRequests(
            central: central, requests: requests, linkSecurity: .none, expectsResponse: true,
            isAuthorizationOnly: false, responder: responder())
    }

    func nextReply() async -> Result<[UInt8], ATTError>? {
        var iterator = replies.makeAsyncIterator()
        return await iterator.next()
    }

    @Test func aReadIsAnsweredWithTheValueFromItsOffset() async {
        #expect(read(offset: 2).respond(with: [1, 2, 3, 4]) == .delivered)
        #expect(await nextReply() == .success([3, 4]))
        #expect(ledger.snapshot.responded == 1)
    }

    @Test func aReadAtTheEndOfTheValueGetsNoBytes() async {
        read(offset: 4).respond(with: [1, 2, 3, 4])
        #expect(await nextReply() == .success([]))
    }

    @Test func aReadPastTheEndIsAnsweredWithInvalidOffset() async {
        read(offset: 5).respond(with: [1, 2, 3, 4])
        #expect(await nextReply() == .failure(.invalidOffset))
        #expect(ledger.snapshot.rejected == 1)
    }

    // A second answer does not compile, which is the point of `~Copyable` + `consuming`:
    //     let request = read()
    //     request.respond(with: [1])
    //     request.reject(.unlikelyError)   // error: 'request' used after consume
    @Test func aRejectionReachesTheStackOnce() async {
        let request = read()
        request.reject(.insufficientAuthorization)
        #expect(await nextReply() == .failure(.insufficientAuthorization))
        sink.finish()
        #expect(await nextReply() == nil)
        #expect(ledger.snapshot.answered == 1)
    }

    @Test func droppedRequestIsRejectedWithUnlikelyError() async {
        do { _ = read() }
        #expect(await nextReply() == .failure(.unlikelyError))
        #expect(ledger.snapshot.dropped == 1)
        #expect(ledger.snapshot.outstanding == 0)
    }

    @Test func droppedWriteBatchIsRejectedWithUnlikelyError() async {
        do { _ = writes([WriteRequest(characteristic: characteristic, offset: 0, value: [1])]) }
        #expect(await nextReply() == .failure(.unlikelyError))
    }

    @Test func theDeadlineAnswersAndALateAnswerIsRefused() async {
        let responder = responder()
        deadlines.arm(responder)
        let request = ReadRequest(
            central: central, characteristic: characteristic, offset: 0, linkSecurity: .none, responder: responder)
        clock.advance(by: .seconds(10))
        #expect(await nextReply() == .failure(.unlikelyError))
        #expect(request.respond(with: [1]) == .refused(alreadyAnsweredBy: .deadline))
        sink.finish()
        #expect(await nextReply() == nil)
        let counts = ledger.snapshot
        #expect(counts.expired == 1 && counts.refusedLate == 1 && counts.outstanding == 0)
    }

    @Test func anAnswerBeforeTheDeadlineDisarmsIt() async throws {
        let responder = responder()
        deadlines.arm(responder)
        ReadRequest(
            central: central, characteristic: characteristic, offset: 0, linkSecurity: .none, responder: responder
        )
        .respond(with: [7])
        // A second request armed later expires after the first's deadline: its answer proves the queue went past it.
        let later = self.responder()
        deadlines.arm(later)
        clock.advance(by: .seconds(10))
        var iterator = replies.makeAsyncIterator()
        #expect(await iterator.next() == .success([7]))
        #expect(await iterator.next() == .failure(.unlikelyError))
        #expect(ledger.snapshot.expired == 1 && ledger.snapshot.refusedLate == 0)
        #expect(later.isAnswered)
    }

    @Test func aWriteWithoutResponseIsCountedButNotSent() async {
        let request = WriteRequests(
            central: central, requests: [WriteRequest(characteristic: characteristic, offset: 0, value: [1])],
            linkSecurity: .none, expectsResponse: false, isAuthorizationOnly: false,
            responder: responder(expectsReply: false))
        #expect(request.reject(.writeNotPermitted) == .delivered)
        #expect(ledger.snapshot.withoutReply == 1 && ledger.snapshot.outstanding == 0)
    }

    @Test func aWriteReplacesTheValueFromItsOffset() {
        let write = WriteRequest(characteristic: characteristic, offset: 2, value: [9, 9])
        #expect(write.applied(to: [1, 2, 3, 4]) == .success([1, 2, 9, 9]))
    }

    @Test func aWritePastTheEndIsInvalidOffset() {
        let write = WriteRequest(characteristic: characteristic, offset: 5, value: [9])
        #expect(write.applied(to: [1, 2, 3, 4]) == .failure(.invalidOffset))
    }

    @Test func aWriteBeyondTheMaximumLengthIsInvalidAttributeValueLength() {
        let write = WriteRequest(characteristic: characteristic, offset: 4, value: [1, 2, 3, 4, 5])
        #expect(write.applied(to: [1, 2, 3, 4]) == .failure(.invalidAttributeValueLength))
        #expect(
            WriteRequest(characteristic: characteristic, offset: 4, value: [1, 2, 3, 4]).applied(to: [1, 2, 3, 4])
                == .success([1, 2, 3, 4, 1, 2, 3, 4]))
    }

    @Test func aBatchIsValidatedAsAWholeAndInOrder() {
        let batch = writes([
            WriteRequest(characteristic: characteristic, offset: 0, value: [1, 2, 3]),
            WriteRequest(characteristic: characteristic, offset: 3, value: [4, 5]),
        ])
        #expect(batch.validated { _ in [] } == .success(["name": [1, 2, 3, 4, 5]]))
        batch.respond()
    }

    @Test func onlyAWriteAtAnOffsetAsksForTheCurrentValue() {
        var asked = 0
        let current: (Characteristic) -> [UInt8] = { _ in
            asked += 1
            return [1, 2, 3, 4]
        }
        let whole = writes([WriteRequest(characteristic: characteristic, offset: 0, value: [9])])
        #expect(whole.validated(current: current) == .success(["name": [9]]))
        #expect(asked == 0)
        whole.respond()
        let part = writes([WriteRequest(characteristic: characteristic, offset: 2, value: [9])])
        #expect(part.validated(current: current) == .success(["name": [1, 2, 9]]))
        #expect(asked == 1)
        part.respond()
    }

    @Test func aBatchWithOneBadWriteIsRejectedAsAWhole() {
        let batch = writes([
            WriteRequest(characteristic: characteristic, offset: 0, value: [1, 2, 3]),
            WriteRequest(characteristic: characteristic, offset: 3, value: [4, 5, 6, 7, 8, 9]),
        ])
        #expect(batch.validated { _ in [] } == .failure(.invalidAttributeValueLength))
        batch.reject(.invalidAttributeValueLength)
    }

    @Test func requestsEqualAnswersUnderConcurrentLoad() async {
        let replyCount = Tally()
        let ledger = ledger
        let deadlines = deadlines
        let central = central
        let characteristic = characteristic
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<125 {
                        let responder = Responder(
                            summary: "load", reply: ClosureReply { _ in replyCount.add() }, ledger: ledger,
                            logger: Logger.quiet)
                        deadlines.arm(responder)
                        let request = ReadRequest(
                            central: central, characteristic: characteristic, offset: 0, linkSecurity: .none,
                            responder: responder)
                        switch (task + index) % 3 {
                        case 0: request.respond(with: [UInt8(index % 256)])
                        case 1: request.reject(.valueNotAllowed)
                        default: _ = consume request  // dropped: its deinit answers
                        }
                    }
                }
            }
        }
        let counts = ledger.snapshot
        #expect(counts.requests == 1000)
        #expect(counts.answered == 1000)
        #expect(replyCount.value == 1000)
        #expect(counts.responded + counts.rejected + counts.dropped == 1000)
        clock.advance(by: .seconds(10))  // lets the deadline task find every request answered and end
    }

    @Test func theAnswerIsCountedBeforeItLeavesSoACentralNeverSeesMoreRequestsThanAnswers() {
        let counts = self.ledger
        let seen = Mutex<RequestCounts?>(nil)
        let responder = Responder(
            summary: "counted read", reply: ClosureReply { _ in seen.withLock { $0 = counts.snapshot } },
            ledger: counts,
            logger: Logger.quiet)
        _ = responder.answer(.success([1]), by: .handler)
        let atReply = seen.withLock { $0 }
        #expect(atReply?.requests == 1)
        #expect(atReply?.answered == 1, "the reply left before the answer was counted")
    }
}

/// A counter tasks can share.
final class Tally: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

extension Logger {
    /// A logger that discards everything: tests pass loggers in and never bootstrap the logging system.
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

}
