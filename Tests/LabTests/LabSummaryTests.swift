import Foundation
import Testing

@testable import Lab

/// summary.json from a run's files: the peripheral's own counters, and unanswered requests said out loud.
struct LabSummaryTests {
    @Test func theSummaryCarriesEachPeripheralsCountersAndFlagsUnansweredRequests() throws {
        let results = NSTemporaryDirectory() + "blemu-summary-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: results) }
        try
            #"{"counters":{"requests":12,"answered":11,"notificationsQueued":40,"notificationsSent":38,"notificationsDropped":2},"ok":true}"#
            .write(toFile: results + "/counters-hci0.json", atomically: true, encoding: .utf8)
        var run = LabRun(
            exitCode: 1, resultsDirectory: results, controllers: [], peripherals: ["hci0", "hci1"], central: "hci2",
            steps: [
                .init(name: "command", sinceStart: .milliseconds(17_240), guestUptime: 14.0),
                .init(name: "power-off", sinceStart: .seconds(40), guestUptime: 36.6),
            ],
            total: .milliseconds(41_060), bluezVersion: "5.82")
        run.kernelRelease = "6.12.118+deb13-amd64"
        let summary = LabSummary(run: run, profiles: ["/p/a.yaml", "/p/b.yaml"])
        #expect(summary.bootSeconds == 17.2 && summary.commandSeconds == 22.6 && summary.totalSeconds == 41.1)
        #expect(summary.peripherals[0].unanswered == 1 && summary.peripherals[0].notificationsDropped == 2)
        #expect(summary.peripherals[1].requests == nil)  // its socket never answered: said, not zero
        #expect(
            summary.line
                == "exit 1 on BlueZ 5.82, kernel 6.12.118+deb13-amd64: boot 17.2 s, command 22.6 s; hci0 12 requests, 11 answered, "
                + "38 notifications sent (1 UNANSWERED); hci1 counters unavailable")
        try summary.write(to: results)
        let decoded = try JSONDecoder().decode(
            LabSummary.self, from: try Data(contentsOf: URL(fileURLWithPath: results + "/summary.json")))
        #expect(decoded == summary)
    }
}
