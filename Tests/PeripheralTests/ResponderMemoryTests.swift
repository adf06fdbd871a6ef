import Foundation
import GATTModel
import Logging
import PeripheralTesting
import Testing

@_spi(Backend) @testable import Peripheral

#if canImport(Glibc)
import Glibc
#endif

/// A request's reply is freed once it is answered. BlueZ's reply (a D-Bus call, a summary, a logger) is too large
/// for an existential's inline buffer, so it lives in a box; with a `consuming` requirement Swift 6.3 leaked that box
/// on every request (about 80 bytes: nearly 300 MB an hour for a `blemu run` serving 1,000 reads a second).
@Suite struct ResponderMemoryTests {
    /// A reply of BlueZ's size: more than three words.
    struct LargeReply: RequestReply, ~Copyable {
        var path: String
        var summary: String
        var operation: String
        var offset: Int
        var sent: (@Sendable (Result<[UInt8], ATTError>) -> Void)?

        mutating func send(_ result: Result<[UInt8], ATTError>) { sent.take()?(result) }
    }

    @Test func answeringARequestLeavesNothingAllocated() {
        let ledger = RequestLedger()
        func oneRequest(_ n: Int) {
            let reply = LargeReply(
                path: "/org/bluez/hci0/dev_\(n)", summary: "read \(n)", operation: "read", offset: n, sent: nil)
            Responder(summary: "read", reply: reply, ledger: ledger, logger: Logger.quiet)
                .answer(.success([1, 2, 3]), by: .handler)
        }
        for n in 0..<1_000 { oneRequest(n) }  // the allocator's caches filled
        // The resident set, process-wide: other suites running beside this one can only add to it, so the least
        // growth of three rounds is this loop's own (a leak of the box alone is 80 bytes a request, every round).
        let count = 200_000
        var perRequest = Double.infinity
        for _ in 0..<3 {
            let before = Self.residentBytes()
            for n in 0..<count { oneRequest(n) }
            perRequest = min(perRequest, Double(Self.residentBytes() - before) / Double(count))
        }
        #expect(perRequest < 24, "the resident set grew by \(perRequest) bytes a request")
        #expect(ledger.snapshot.requests == 3 * count + 1_000 && ledger.snapshot.answered == 3 * count + 1_000)
    }

    /// The process's resident set (/proc/self/statm), in bytes.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }
}
