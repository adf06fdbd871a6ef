import Synchronization
import Testing

@_spi(Backend) @testable import Peripheral

/// Waiting on the request counts: woken by the change that satisfies the condition, not by a poll.
@Suite struct RequestLedgerTests {
    @Test func aConditionThatAlreadyHoldsReturnsAtOnce() async {
        let ledger = RequestLedger()
        ledger.recordRequest()
        #expect(await ledger.wait(within: .seconds(5)) { $0.requests == 1 })
    }

    @Test func theAnswerThatSatisfiesTheConditionWakesTheWaiter() async {
        let ledger = RequestLedger()
        ledger.recordRequest()
        let asked = AskCount()
        async let answered = ledger.wait(within: .seconds(30)) { counts in
            asked.add()
            return counts.outstanding == 0 && counts.requests == 1
        }
        // Once the condition was asked, the answer below must wake the wait, whether it is asleep by then or not yet
        // (the wait remembers which change it checked after), and a wait that timed out gives false.
        while asked.value == 0 { await Task.yield() }
        ledger.recordAnswer(by: .handler, isError: false, hasReply: true)
        #expect(await answered)
        #expect(asked.value == 2)
        #expect(ledger.snapshot.answered == 1)
    }

    @Test func aConditionThatNeverHoldsReturnsFalseAfterTheLimit() async {
        let ledger = RequestLedger()
        ledger.recordRequest()
        let asked = AskCount()
        let reached = await ledger.wait(within: .milliseconds(50)) { counts in
            asked.add()
            return counts.requests == 2
        }
        #expect(reached == false)
        // The expired waiter is gone: the change that would have satisfied it no longer asks its condition.
        ledger.recordRequest()
        #expect(asked.value == 1)
    }

    @Test func aCancelledWaitReturnsFalse() async {
        let ledger = RequestLedger()
        let waiting = Task { await ledger.wait(within: .seconds(30)) { $0.requests == 1 } }
        waiting.cancel()
        #expect(await waiting.value == false)
    }

    @Test func severalWaitersEachWakeWhenTheirOwnConditionHolds() async {
        let ledger = RequestLedger()
        let asked = AskCount()
        async let first = ledger.wait(within: .seconds(30)) { counts in
            asked.add()
            return counts.requests >= 1
        }
        async let third = ledger.wait(within: .seconds(30)) { counts in
            asked.add()
            return counts.requests >= 3
        }
        // Both registered (each asked once) before the first request.
        while asked.value < 2 { await Task.yield() }
        for _ in 1...3 { ledger.recordRequest() }
        #expect(await first)
        #expect(await third)
    }
}

/// How many times a condition was asked, from whatever thread asks it.
private final class AskCount: Sendable {
    private let count = Atomic(0)

    var value: Int { count.load(ordering: .sequentiallyConsistent) }

    func add() { count.add(1, ordering: .sequentiallyConsistent) }
}
