import Emulation
import Foundation
import GATTModel
import Peripheral
import PeripheralTesting
import Synchronization
import Testing

@Suite struct EventLogTests {
    @Test func eventLogFileHasOneParseableLinePerEventIncludingAnsweredRequests() async throws {
        let path = try temporaryDirectory() + "/events.jsonl"
        let log = try EventLog(path: path)
        let rig = try await Rig(try bundledProfile("heart-rate"), eventLog: log)
        await rig.start()
        let central = VirtualCentral(connectingTo: rig.backend)
        #expect(try await central.read("body-sensor-location") == [0x01])
        await #expect(throws: ATTError(rawValue: 0x80)) {
            try await central.write([0x02], to: "heart-rate-control-point")
        }
        log.flush()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { object(String($0)) }
        #expect(lines.allSatisfy { $0["time"] is String && $0["type"] is String })
        let requests = lines.filter { $0["type"] as? String == "request" }
        #expect(requests.map { $0["result"] as? String } == ["success", "error"])
        #expect(requests.last?["code"] as? Int == 0x80)
    }
}

extension EventLogTests {
    @Test(.timeLimit(.minutes(1)))
    func aReaderThatStopsReadingNeverBlocksTheRecorderAndTheDroppedLinesAreCounted() throws {
        let path = try temporaryDirectory() + "/events.fifo"
        #expect(mkfifo(path, 0o600) == 0)
        // Our end first, non-blocking, so the log's O_WRONLY open finds a reader; then nobody reads for a while.
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        let log = try EventLog(path: path)
        let total = EventLog.maximumPending + 1_000
        for index in 0..<total { log.record(.queueFull(characteristicID: "c\(index)")) }
        // Every record returned although the pipe filled after a few hundred lines.
        let dropped = log.droppedLines
        #expect(dropped > 0 && dropped <= 1_000)
        let drained = DispatchQueue(label: "drain")
        let text = Mutex("")
        drained.async {
            _ = fcntl(reader, F_SETFL, 0)
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var bytes: [UInt8] = []
            while true {
                let count = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                bytes += buffer[..<count]
            }
            text.withLock { $0 = String(decoding: bytes, as: UTF8.self) }
        }
        log.close()
        drained.sync {}
        close(reader)
        let lines = text.withLock { $0 }.split(separator: "\n").map { object(String($0)) }
        let written = lines.filter { $0["type"] as? String == "queue-full" }.compactMap {
            $0["characteristic"] as? String
        }
        #expect(written.count == total - dropped)
        #expect(written == written.sorted { Int($0.dropFirst())! < Int($1.dropFirst())! }, "lines stay in order")
        #expect(lines.last?["type"] as? String == "lines-dropped")
        #expect(lines.last?["count"] as? Int == dropped)
    }
}

extension EventLogTests {
    /// A reader that reads nothing holds a stopping process for `patience` only: then what is pending is counted as
    /// lost, with the reason, and close returns. (A slow reader that keeps reading is waited for: the test above.)
    @Test(.timeLimit(.minutes(1)))
    func closingGivesUpOnAReaderThatReadsNothingAndCountsWhatWasPending() throws {
        let path = try temporaryDirectory() + "/stalled.fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        _ = fcntl(reader, 1031, 4096)  // F_SETPIPE_SZ: one page fills after a few dozen lines
        let log = try EventLog(path: path)
        for index in 0..<500 { log.record(.queueFull(characteristicID: "c\(index)")) }
        let started = ContinuousClock.now
        log.close(waitingAtMost: .milliseconds(200))
        #expect(ContinuousClock.now - started < .seconds(3), "close waited for a reader that reads nothing")
        #expect(log.lostLines > 400, "\(log.lostLines) lines counted as lost")
        #expect(log.writeFailure == "nothing was read for 0.2 s at shutdown")
    }

    @Test func aReaderThatWentAwayCostsLinesNotTheProcessAndTheLossIsCounted() throws {
        // What `blemu run --events - | head -3` meets once head exits. blemu run ignores SIGPIPE; so does this.
        signal(SIGPIPE, SIG_IGN)
        let path = try temporaryDirectory() + "/events.fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        let log = try EventLog(path: path)
        close(reader)
        for index in 0..<10 { log.record(.queueFull(characteristicID: "c\(index)")) }
        log.flush()
        #expect(log.lostLines == 10)
        #expect(log.writeFailure == String(cString: strerror(EPIPE)))
        log.close()
    }

    @Test func aFullDiskIsSaidAndCountedWhileRecordingGoesOn() throws {
        try #require(FileManager.default.isWritableFile(atPath: "/dev/full"), "Linux has /dev/full")
        let log = try EventLog(path: "/dev/full")
        for index in 0..<5 { log.record(.queueFull(characteristicID: "c\(index)")) }
        log.flush()
        #expect(log.lostLines == 5)
        #expect(log.writeFailure == String(cString: strerror(ENOSPC)))
        log.close()
    }
}
