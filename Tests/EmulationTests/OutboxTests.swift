import GATTModel
import Peripheral
import Testing

@testable import Emulation

/// `Outbox`: the updates waiting for the notification queue, in order and bounded, with a burst one entry.
struct OutboxTests {
    let rate = Characteristic(id: "rate", uuid: BluetoothUUID(0x2A37), properties: [.notify])
    let text = Characteristic(id: "text", uuid: BluetoothUUID(0x2A38), properties: [.notify])

    @Test func aBurstIsOneEntryCountedForItsUpdatesAndLeavesWhenItsLastGoesOut() throws {
        var outbox = Outbox(capacity: 10)
        func add(_ entry: Outbox.Entry) -> Bool { outbox.append(entry) }
        #expect(add(.value(rate, [1], to: nil, times: 3)))
        #expect(outbox.updates == 3)
        let (serial, _) = try #require(outbox.first)
        outbox.sentValue(serial)
        outbox.sentValue(serial)
        guard case .value(_, [1], nil, 1)? = outbox.first?.entry else {
            Issue.record("the burst should have one update left: \(String(describing: outbox.first))")
            return
        }
        outbox.sentValue(serial)
        #expect(outbox.first == nil && outbox.updates == 0)
    }

    @Test func whatDoesNotFitIsRefusedWholeAndChangesNothing() {
        var outbox = Outbox(capacity: 5)
        func add(_ entry: Outbox.Entry) -> Bool { outbox.append(entry) }
        #expect(add(.value(rate, [1], to: nil, times: 4)))
        #expect(!outbox.fits(2) && outbox.fits(1))
        #expect(!add(.value(rate, [2], to: nil, times: 2)))
        #expect(outbox.updates == 4)
        #expect(add(.value(text, [3], to: nil, times: 1)))
        #expect(!add(.value(text, [4], to: nil, times: 1)))
        #expect(outbox.updates == 5)
        #expect(!add(.value(text, [5], to: nil, times: 0)), "an entry of no update is not one")
    }

    @Test func aReportForAnEntryNoLongerFirstChangesNothing() throws {
        var outbox = Outbox(capacity: 10)
        func add(_ entry: Outbox.Entry) -> Bool { outbox.append(entry) }
        let central = Central(id: "/dev_A")
        let chunker = try #require(TransferChunker(bytes: Array("hello".utf8), maximumUpdateLength: 20))
        #expect(add(.transfer(text, central, chunker)))
        #expect(add(.value(rate, [1], to: nil, times: 2)))
        let transfer = try #require(outbox.first).serial
        // The transfer's central left while its chunk was out: it is removed, and its late report finds the value.
        outbox.removeAll { if case .transfer = $0 { true } else { false } }
        #expect(outbox.updates == 2)
        outbox.transferDone(transfer)
        outbox.sentValue(transfer)
        #expect(outbox.updates == 2)
        let value = try #require(outbox.first).serial
        outbox.sentValue(value)
        outbox.sentValue(value)
        #expect(outbox.first == nil && outbox.updates == 0)
    }

    @Test func aTransferRemovedWhileItsChunkWasOutIsNotTouchedByItsLateReport() throws {
        var outbox = Outbox(capacity: 10)
        func add(_ entry: Outbox.Entry) -> Bool { outbox.append(entry) }
        let chunker = try #require(TransferChunker(bytes: Array("hello".utf8), maximumUpdateLength: 20))
        var advanced = chunker
        advanced.markSent()
        #expect(add(.transfer(text, Central(id: "/dev_A"), chunker)))
        #expect(add(.transfer(text, Central(id: "/dev_B"), chunker)))
        let first = try #require(outbox.first).serial
        outbox.removeAll { if case .transfer(_, Central(id: "/dev_A"), _) = $0 { true } else { false } }
        // The report of A's transfer finds B's first: it must neither move B's chunker on nor remove it.
        outbox.transferWaits(first, at: advanced)
        outbox.transferDone(first)
        guard case .transfer(_, let central, let left)? = outbox.first?.entry else {
            Issue.record("B's transfer should still be first: \(String(describing: outbox.first))")
            return
        }
        #expect(central.id == "/dev_B" && left == chunker && outbox.updates == 1)
    }

    @Test func thousandsSentOneByOneKeepTheirOrder() throws {
        var outbox = Outbox(capacity: 5_000)
        func add(_ entry: Outbox.Entry) -> Bool { outbox.append(entry) }
        for index in 0..<5_000 { #expect(add(.value(rate, [UInt8(index % 256)], to: nil, times: 1))) }
        var seen: [UInt8] = []
        while let (serial, entry) = outbox.first {
            guard case .value(_, let bytes, _, _) = entry else { break }
            seen += bytes
            outbox.sentValue(serial)
        }
        #expect(seen == (0..<5_000).map { UInt8($0 % 256) })
        #expect(outbox.updates == 0 && outbox.fits(5_000))
    }
}
