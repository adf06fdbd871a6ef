import Foundation
import Testing

@testable import Lab

/// RootCanal's log as the results keep it (`RootCanalLog`): every line but the ones each controller writes for a
/// packet addressed to another, and at the end how many were left out.
struct RootCanalLogTests {
    @Test func everyLineButThePacketsForOthersIsKeptInOrderAndTheOmittedAreCounted() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rootcanal-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try RootCanalLog(path: path)
        // Lines as RootCanal 1.13.0 writes them; the last one comes without its newline, in two writes.
        let lines = [
            "root-canal I 11-29 19:22:29.112 le_controller.cc:4806  4  LE-ACL Packet [9] da:4c:10:de:00:00 -> da:4c:10:de:00:02",
            "root-canal D 11-29 19:32:43.083 le_controller.cc:4674  52  [LL] da:4c:10:de:00:32 | Dropping PING_REQUEST "
                + "packet not addressed to me da:4c:10:de:00:1c->da:4c:10:de:00:00",
            "root-canal D 11-29 19:32:43.083 le_controller.cc:4674  53  [LL] da:4c:10:de:00:33 | Dropping ACL packet not "
                + "addressed to me da:4c:10:de:00:1c->da:4c:10:de:00:00",
            "root-canal I 11-29 19:03:42.601 test_environment.cc:99  Opening an HCI with port 6402",
        ]
        let text = lines.joined(separator: "\n") + "\nroot-canal I the last"
        for part in [text.prefix(100), text.dropFirst(100).dropLast(4), text.suffix(4)] {
            _ = Array(part.utf8).withUnsafeBytes { write(log.writeEnd, $0.baseAddress, $0.count) }
        }
        log.closeWriteEnd()
        log.finish()
        let kept = try String(contentsOfFile: path, encoding: .utf8)
        #expect(
            kept == [lines[0], lines[3], "root-canal I the last"].joined(separator: "\n")
                + "\nblemu: left out 2 lines \"... packet not addressed to me\" (docs/lab.md, \"RootCanal's air\")\n")
        #expect(RootCanalLog.keeps(Array("short".utf8)[...]))
        #expect(!RootCanalLog.keeps(Array("packet not addressed to me".utf8)[...]))
    }
}
