import ControlProtocol
import Emulation
import Foundation
import Testing

/// `ControlClient.stream(_:until:line:)`: a stream that ends by a deadline however quiet the device, so a waiting
/// thread is never left blocked in read(2).
@Suite struct ControlClientDeadlineTests {
    @Test func aQuietStreamEndsAtItsDeadlineAndAStoppedOneAtOnce() async throws {
        let (_, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let started = ContinuousClock.now
        let (end, lines) = try await offPool {
            var lines: [String] = []
            let end = try client.stream(["command": "events", "follow": true], until: .now + .milliseconds(300)) {
                lines.append($0)
                return true
            }
            return (end, lines)
        }
        let took = ContinuousClock.now - started
        #expect(end == .deadline)
        // The response first; the rig's own start (its `state` line) may follow it, nothing the test does.
        #expect(lines.first.map(ControlClient.isOK) == true, "the response first: \(lines)")
        #expect(lines.dropFirst().allSatisfy { $0.contains(#""type":"state""#) }, "\(lines)")
        // Ended by the deadline, not by a line: a read left blocked would never return (30 s: a loaded machine).
        #expect(took >= .milliseconds(300) && took < .seconds(30), "\(took)")

        let first = try await offPool {
            var first: String?
            let end = try client.stream(["command": "counters"], until: .now + .seconds(10)) {
                first = $0
                return false
            }
            return (end, first)
        }
        #expect(first.0 == .stopped && first.1.map(ControlClient.isOK) == true, "\(first)")
    }

    @Test func aStreamTheServerEndsIsClosedAndAMissingSocketUnreachable() async throws {
        let (_, server, client) = try await controlledHeartRate()
        let end = try await offPool {
            try client.stream(["command": "events", "follow": true], until: .now + .seconds(20)) { _ in
                server.stop()  // after the response: the peripheral goes away mid-stream
                return true
            }
        }
        #expect(end == .closed)
        #expect(throws: ControlClient.Unreachable.self) {
            try ControlClient(path: server.path).stream(["command": "counters"], until: .now + .seconds(1)) { _ in true
            }
        }
    }
}
