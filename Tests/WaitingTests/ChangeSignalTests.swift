import PeripheralTesting
import Synchronization
import Testing
import Waiting

/// The one way to wait: a condition holds now, after a change, at the deadline, or never; a change during the
/// check is not lost; a cancelled wait ends; the deadline runs on the clock given.
@Suite(.timeLimit(.minutes(1)))
struct ChangeSignalTests {
    /// A value that changes under a lock, with the signal its changes ring.
    final class Watched: Sendable {
        let signal = ChangeSignal()
        private let value = Mutex(0)
        var now: Int { value.withLock { $0 } }
        func set(_ new: Int) {
            value.withLock { $0 = new }
            signal.changed()
        }
    }

    @Test func aConditionThatHoldsNowAnswersAtOnceWithoutAChange() async {
        let watched = Watched()
        watched.set(3)
        let clock = ManualClock()
        #expect(
            await watched.signal.first(within: .seconds(5), clock: clock) { watched.now == 3 ? "three" : nil }
                == "three")
    }

    @Test func aWaitWakesAtTheChangeThatMakesItHold() async {
        let watched = Watched()
        let clock = ManualClock()
        async let waited = watched.signal.until(within: .seconds(5), clock: clock) { watched.now >= 2 }
        // The waiter is asleep once its deadline timer sleeps on the clock: changes that do not satisfy it, then
        // one that does.
        await clock.waitForSleepers(1)
        watched.set(1)
        watched.set(2)
        #expect(await waited)
    }

    @Test func theDeadlineOnTheClockEndsTheWaitAndNothingIsAskedAfterIt() async {
        let watched = Watched()
        let clock = ManualClock()
        let asked = Mutex(0)
        async let waited = watched.signal.until(within: .seconds(5), clock: clock) {
            asked.withLock { $0 += 1 }
            return watched.now == 9
        }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        #expect(await waited == false)
        // The wait is gone: the change that would have satisfied it asks nothing.
        watched.set(9)
        #expect(asked.withLock { $0 } == 1)
    }

    @Test func aChangeDuringTheCheckIsNotLost() async {
        let watched = Watched()
        let clock = ManualClock()
        // The first check fails, and the change that makes the next one hold comes while it runs: the wait must
        // not sleep past it (nothing else will change, and the deadline never comes on this clock).
        let checks = Mutex(0)
        let held = await watched.signal.until(within: .seconds(5), clock: clock) {
            let count = checks.withLock {
                $0 += 1
                return $0
            }
            if count == 1 { watched.set(1) }
            return watched.now == 1 && count > 1
        }
        #expect(held && checks.withLock { $0 } == 2)
    }

    @Test func aCancelledWaitEnds() async {
        let watched = Watched()
        let clock = ManualClock()
        let task = Task { await watched.signal.until(within: .seconds(60), clock: clock) { watched.now == 5 } }
        await clock.waitForSleepers(1)
        task.cancel()
        #expect(await task.value == false)
        // Nobody left asleep: a change after it wakes nothing and costs nothing.
        watched.set(5)
    }

    @Test func manyWaitersEachWakeForTheirOwnCondition() async {
        let watched = Watched()
        let clock = ManualClock()
        await withTaskGroup(of: Bool.self) { group in
            for target in 1...8 {
                group.addTask {
                    await watched.signal.until(within: .seconds(5), clock: clock) { watched.now >= target }
                }
            }
            await clock.waitForSleepers(8)
            for value in 1...8 { watched.set(value) }
            var all: [Bool] = []
            for await held in group { all.append(held) }
            #expect(all == Array(repeating: true, count: 8))
        }
    }
}
