import GATTModel
import GATTProfile
import Testing

@testable import Emulation

@Suite struct FaultsTests {
    @Test func nthReadIsRejectedExactlyOnce() {
        var engine = Faults(faults: [
            Fault(trigger: .request(.read, characteristicID: "battery-level", nth: 3), effect: .reject(.unlikelyError))
        ])
        let rejections = (1...8).map { _ in engine.request(.read, characteristicID: "battery-level").rejection }
        #expect(rejections == [nil, nil, .unlikelyError, nil, nil, nil, nil, nil])
    }

    @Test func requestsAreCountedPerCharacteristicAndOverall() {
        var engine = Faults(faults: [
            Fault(trigger: .request(.write, characteristicID: "b", nth: 2), effect: .delay(.seconds(2))),
            Fault(trigger: .request(.write, characteristicID: nil, nth: 2), effect: .reject(.writeNotPermitted)),
        ])
        let first = engine.request(.write, characteristicID: "a")
        let second = engine.request(.write, characteristicID: "b")  // second overall, first on b
        let third = engine.request(.write, characteristicID: "b")  // second on b
        #expect(first.isEmpty)
        #expect(second == Faults.RequestFaults(rejection: .writeNotPermitted))
        #expect(third == Faults.RequestFaults(delay: .seconds(2)))
        #expect(engine.count(of: .write, characteristicID: "b") == 2)
        #expect(engine.count(of: .write) == 3)
        #expect(engine.count(of: .read) == 0)
    }

    @Test func aBatchThatWouldBeDelayedIsNotCountedUntilItGoesWhereItCanWait() {
        var engine = Faults(faults: [
            Fault(trigger: .request(.write, characteristicID: "b", nth: 1), effect: .delay(.seconds(1))),
            Fault(trigger: .request(.write, characteristicID: "a", nth: 2), effect: .reject(.writeNotPermitted)),
        ])
        #expect(engine.requestsUnlessDelayed(.write, characteristicIDs: ["a"]) == Faults.RequestFaults())
        // b's first write would be delayed: nothing of the batch is counted, a's second write included.
        #expect(engine.requestsUnlessDelayed(.write, characteristicIDs: ["a", "b"]) == nil)
        #expect(engine.count(of: .write, characteristicID: "a") == 1)
        #expect(engine.count(of: .write) == 1)
        // Where it can wait, the same batch is counted once and gets both faults, merged.
        let merged = engine.requests(.write, characteristicIDs: ["a", "b"])
        #expect(merged == Faults.RequestFaults(rejection: .writeNotPermitted, delay: .seconds(1)))
        #expect(engine.count(of: .write) == 3)
        #expect(engine.requestsUnlessDelayed(.write, characteristicIDs: ["b"]) == Faults.RequestFaults())
    }

    @Test func aBatchWritingOneCharacteristicTwiceIsCountedAheadTwice() {
        var engine = Faults(faults: [
            Fault(trigger: .request(.write, characteristicID: nil, nth: 3), effect: .delay(.seconds(1)))
        ])
        #expect(engine.requestsUnlessDelayed(.write, characteristicIDs: ["a", "a"]) == Faults.RequestFaults())
        // The third write overall would be delayed, and it is this batch's second.
        #expect(engine.requestsUnlessDelayed(.write, characteristicIDs: ["b", "a"]) == nil)
        #expect(engine.count(of: .write) == 2)
        #expect(engine.requests(.write, characteristicIDs: ["b", "a"]).delay == .seconds(1))
        #expect(engine.requestsUnlessDelayed(.write, characteristicIDs: ["a"]) == Faults.RequestFaults())
    }

    @Test func aFaultInjectedAfterUnfaultedRequestsCountsFromItsInjection() {
        var engine = Faults(faults: [])
        for _ in 1...5 { #expect(engine.request(.read, characteristicID: "a").isEmpty) }
        engine.inject(
            Fault(trigger: .request(.read, characteristicID: "a", nth: 2), effect: .reject(.unlikelyError)),
            at: .zero)
        let rejections = (1...3).map { _ in engine.request(.read, characteristicID: "a").rejection }
        #expect(rejections == [nil, .unlikelyError, nil])
    }

    @Test func timedFaultsComeOutOfTicksOnce() {
        var engine = Faults(faults: [
            Fault(trigger: .after(.seconds(600)), effect: .disconnect),
            Fault(trigger: .after(.seconds(60)), effect: .stopAdvertising),
        ])
        #expect(engine.nextDeadline == nil)
        engine.start(at: .seconds(10))
        #expect(engine.nextDeadline == .seconds(70))
        #expect(engine.tick(at: .seconds(69)).isEmpty)
        #expect(engine.tick(at: .seconds(70)) == [.stopAdvertising])
        #expect(engine.tick(at: .seconds(1000)) == [.disconnect])
        #expect(engine.tick(at: .seconds(2000)).isEmpty)
        #expect(engine.nextDeadline == nil)
    }
}

@Suite struct TransferChunkerTests {
    @Test func hundredByteTextAtLimitTwentyGivesFiveChunksThenEOM() throws {
        let text = String(repeating: "0123456789", count: 10)
        var chunker = try #require(TransferChunker(text: text, maximumUpdateLength: 20))
        var sent: [[UInt8]] = []
        while let chunk = chunker.next() {
            sent.append(chunk)
            chunker.markSent()
        }
        #expect(sent.count == 6)
        #expect(sent.prefix(5).allSatisfy { $0 == Array("01234567890123456789".utf8) })
        #expect(sent.last == Array("EOM".utf8))
        #expect(chunker.isFinished)
    }

    @Test func pausingOnAFullQueueLosesAndRepeatsNothing() throws {
        let text = "Hello from blemu! This text travels in 20-byte chunks."
        var chunker = try #require(TransferChunker(text: text, maximumUpdateLength: 20))
        var received: [UInt8] = []
        var attempt = 0
        while let chunk = chunker.next() {
            attempt += 1
            if attempt % 2 == 0 { continue }  // every other update finds the queue full; retry when ready
            if chunk == TransferChunker.endOfMessage { break }
            #expect(chunk.count <= 20)
            received += chunk
            chunker.markSent()
        }
        #expect(String(decoding: received, as: UTF8.self) == text)
    }

    @Test func emptyTextIsJustEOMAndTinyLimitsAreRefused() throws {
        var chunker = try #require(TransferChunker(text: "", maximumUpdateLength: 20))
        #expect(chunker.next() == Array("EOM".utf8))
        chunker.markSent()
        #expect(chunker.next() == nil)
        #expect(TransferChunker(text: "abc", maximumUpdateLength: 2) == nil)
    }
}
