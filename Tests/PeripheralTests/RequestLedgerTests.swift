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
        async let answered = ledger.wait(within: .seconds(30)) { $0.outstanding == 0 && $0.requests == 1 }
        // The waiter is registered or not yet: either way the answer below must satisfy it (a wait that timed out
        // would give false after 30 s).
        await Task.yield()
        ledger.recordAnswer(by: .handler, isError: false, hasReply: true)
        #expect(await answered)
        #expect(ledger.snapshot.answered == 1)
    }

    @Test func aConditionThatNeverHoldsReturnsFalseAfterTheLimit() async {
        let ledger = RequestLedger()
        ledger.recordRequest()
        #expect(await ledger.wait(within: .milliseconds(50)) { $0.requests == 2 } == false)
        // The expired waiter is gone: the change that would have satisfied it wakes nobody and counts as usual.
        ledger.recordRequest()
        #expect(ledger.snapshot.requests == 2)
    }

    @Test func aCancelledWaitReturnsFalse() async {
        let ledger = RequestLedger()
        let waiting = Task { await ledger.wait(within: .seconds(30)) { $0.requests == 1 } }
        waiting.cancel()
        #expect(await waiting.value == false)
    }

    @Test func severalWaitersEachWakeWhenTheirOwnConditionHolds() async {
        let ledger = RequestLedger()
        async let first = ledger.wait(within: .seconds(30)) { $0.requests >= 1 }
        async let third = ledger.wait(within: .seconds(30)) { $0.requests >= 3 }
        for _ in 1...3 {
            await Task.yield()
            ledger.recordRequest()
        }
        #expect(await first)
        #expect(await third)
    }
}
