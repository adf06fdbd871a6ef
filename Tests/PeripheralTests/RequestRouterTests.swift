import GATTModel
import Logging
import PeripheralTesting
import Synchronization
import Testing

@_spi(Backend) @testable import Peripheral

/// The one request path every backend takes: straight from the stack's thread to the handler.
@Suite struct RequestRouterTests {
    let ledger = RequestLedger()
    let clock = ManualClock()
    private let log = ReplyLog()

    func router(_ handler: any RequestHandler) -> RequestRouter {
        let router = RequestRouter(
            handler: handler, ledger: ledger, deadline: .seconds(10), deadlineError: .unlikelyError,
            clock: ElapsedClock(clock), logger: Logger.quiet)
        router.publish(Fixture.service.characteristics)
        return router
    }

    var replies: [Result<[UInt8], ATTError>] { log.all.withLock { $0 } }

    func record() -> @Sendable (Result<[UInt8], ATTError>) -> Void {
        let log = log
        return { result in
            log.all.withLock { $0.append(result) }
            log.arrived.yield()
        }
    }

    func read(_ id: String, offset: Int = 0) -> IncomingRead {
        IncomingRead(
            central: Central(id: "central"), characteristicID: id, offset: offset, reply: ClosureReply(record()))
    }

    func nextArrival() async {
        var iterator = log.arrivals.makeAsyncIterator()
        _ = await iterator.next()
    }

    @Test func aHandlerThatDecidesAtOnceHasAnsweredWhenReadReturns() {
        router(ProfileServer()).read(read("name", offset: 1))
        #expect(replies == [.success(Array("lemu".utf8))])
        #expect(ledger.snapshot.responded == 1)
        #expect(ledger.snapshot.outstanding == 0)
    }

    @Test func aWriteIsStoredAndAnsweredBeforeWriteReturns() {
        let store = ValueStore()
        router(ProfileServer(store: store)).write(
            IncomingWrites(
                central: Central(id: "central"),
                writes: [IncomingWrites.Write(characteristicID: "setting", value: [7, 8])],
                reply: ClosureReply(record())))
        #expect(replies == [.success([])])
        #expect(store.value(of: Fixture.setting) == [7, 8])
    }

    @Test func aWriteWithoutResponseIsCountedWithoutAReply() {
        router(ProfileServer()).write(
            IncomingWrites(
                central: Central(id: "central"),
                writes: [IncomingWrites.Write(characteristicID: "setting", value: [1])], reply: nil))
        #expect(ledger.snapshot.responded == 1)
        #expect(ledger.snapshot.withoutReply == 1)
    }

    @Test func anUnpublishedCharacteristicIsAnsweredInvalidHandleByTheEngine() {
        let router = router(ProfileServer())
        router.remove(["name"])
        router.read(read("name"))
        #expect(replies == [.failure(.invalidHandle)])
        #expect(ledger.snapshot.answeredByEngine == 1)
    }

    @Test func aRepeatedRequestFindsTheCharacteristicAsPublishedNow() {
        let router = router(ProfileServer())
        router.read(read("name"))
        router.read(read("name"))
        // Withdrawn after the two reads found it, republished with another value: each read sees the table as it is.
        router.remove(["name"])
        router.read(read("name"))
        let renamed = Characteristic(
            id: "name", uuid: BluetoothUUID(0x2A00), properties: [.read], value: .cached(Array("other".utf8)))
        router.publish([renamed])
        router.read(read("name"))
        #expect(
            replies == [
                .success(Array("blemu".utf8)), .success(Array("blemu".utf8)), .failure(.invalidHandle),
                .success(Array("other".utf8)),
            ])
    }

    @Test func aRequestAnsweredAtOnceNeverReachesTheAsyncMethodAndOneHandedBackDoes() async {
        let handler = Splitting()
        let router = router(handler)
        router.read(read("name"))
        #expect(replies == [.success([1])], "answered before read returned")
        router.read(read("setting"))
        await nextArrival()
        #expect(replies == [.success([1]), .success([2])])
        #expect(handler.asyncReads.load(ordering: .relaxed) == 1, "only the handed-back read went to handleRead")
        #expect(ledger.snapshot.responded == 2)
    }

    @Test func aRequestKeptByAnswerAtOnceGetsTheDeadlineAndALateAnswerIsRefused() async {
        let handler = Keeping()
        let router = router(handler)
        router.read(read("name"))
        #expect(replies.isEmpty)
        clock.advance(by: .seconds(10))
        await nextArrival()
        #expect(replies == [.failure(.unlikelyError)])
        #expect(ledger.snapshot.expired == 1)
        let late = handler.kept.withLock { $0.take() }
        #expect(late?.respond(with: [3]) == .refused(alreadyAnsweredBy: .deadline))
        #expect(replies == [.failure(.unlikelyError)])
        #expect(ledger.snapshot.refusedLate == 1)
    }

    @Test func aHandlerThatSuspendsIsAnsweredByTheDeadlineAndNotBefore() async {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let router = router(Stalling(gate: gate))
        router.read(read("name"))
        clock.advance(by: .seconds(6))
        router.read(read("name"))  // due at 16 s
        #expect(replies.isEmpty)
        clock.advance(by: .seconds(4))
        await nextArrival()
        #expect(replies == [.failure(.unlikelyError)], "only the first request's deadline had passed")
        clock.advance(by: .seconds(6))
        await nextArrival()
        #expect(replies == [.failure(.unlikelyError), .failure(.unlikelyError)])
        #expect(ledger.snapshot.expired == 2)
        open.finish()
    }

    @Test func manySuspendedRequestsShareTheDeadlineTimerAndEachExpiresOnce() async {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let router = router(Stalling(gate: gate))
        for _ in 0..<50 { router.read(read("name")) }
        clock.advance(by: .seconds(10))
        for _ in 0..<50 { await nextArrival() }
        #expect(replies.count == 50)
        #expect(replies.allSatisfy { $0 == .failure(.unlikelyError) })
        #expect(ledger.snapshot.expired == 50)
        #expect(ledger.snapshot.outstanding == 0)
        open.finish()
    }

    @Test func aHandlerThatSuspendsAndThenAnswersIsAnsweredOnce() async {
        let (gate, open) = AsyncStream<Void>.makeStream()
        router(Stalling(gate: gate)).read(read("name"))
        #expect(replies.isEmpty)
        open.finish()
        await nextArrival()
        #expect(replies == [.success([9])])
        #expect(ledger.snapshot.responded == 1)
        #expect(ledger.snapshot.expired == 0)
    }
}

/// Every reply so far (to check what had arrived when `read`/`write` returned), and a stream to wait for the next.
private final class ReplyLog: Sendable {
    let all = Mutex<[Result<[UInt8], ATTError>]>([])
    let arrivals: AsyncStream<Void>
    let arrived: AsyncStream<Void>.Continuation

    init() { (arrivals, arrived) = AsyncStream.makeStream() }
}

/// Answers reads with [9] once `gate` finishes: a handler that has to wait.
private struct Stalling: RequestHandler {
    let gate: AsyncStream<Void>

    func handleRead(_ request: consuming ReadRequest) async {
        for await _ in gate {}
        request.respond(with: [9])
    }

    func handleWrites(_ requests: consuming WriteRequests) async { requests.respond() }
}

/// Answers reads of `name` in `answerAtOnce` with [1] and hands back the rest, which `handleRead` answers with [2]
/// and counts.
private final class Splitting: RequestHandler {
    let asyncReads = Atomic<Int>(0)

    func answerAtOnce(_ request: consuming ReadRequest) -> ReadRequest? {
        guard request.characteristic.id == "name" else { return request }
        request.respond(with: [1])
        return nil
    }

    func handleRead(_ request: consuming ReadRequest) async {
        asyncReads.add(1, ordering: .relaxed)
        request.respond(with: [2])
    }

    func handleWrites(_ requests: consuming WriteRequests) async { requests.respond() }
}

/// Keeps every read `answerAtOnce` gets, unanswered, as a handler that answers later from elsewhere would.
private final class Keeping: RequestHandler {
    let kept = Mutex<ReadRequest?>(nil)

    func answerAtOnce(_ request: consuming ReadRequest) -> ReadRequest? {
        var moved = Optional(request)
        kept.withLock { $0 = moved.take() }
        return nil
    }

    func handleRead(_ request: consuming ReadRequest) async { request.reject(.unlikelyError) }

    func handleWrites(_ requests: consuming WriteRequests) async { requests.respond() }
}
