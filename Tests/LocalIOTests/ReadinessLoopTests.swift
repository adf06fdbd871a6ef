import Glibc
import Testing

@testable import LocalIO

/// The loop the control socket's connections wait on: a wait ends when its descriptor is ready, when its deadline
/// has passed, or when the loop stops, and each wait is resumed exactly once.
@Suite(.timeLimit(.minutes(1))) struct ReadinessLoopTests {
    /// A pipe's two ends, closed when the test ends.
    private final class Pipe: Sendable {
        let reader: Int32
        let writer: Int32
        init() {
            var ends: [Int32] = [-1, -1]
            _ = pipe(&ends)
            (reader, writer) = (ends[0], ends[1])
        }
        func send() {
            var byte: UInt8 = 1
            _ = write(writer, &byte, 1)
        }
        deinit {
            close(reader)
            close(writer)
        }
    }

    @Test func aWaitEndsWhenItsDescriptorHasBytesAndNamesIt() async throws {
        let loop = try ReadinessLoop()
        defer { loop.stop() }
        let quiet = Pipe()
        let talking = Pipe()
        async let outcome = loop.wait(for: .readable, on: [quiet.reader, talking.reader])
        talking.send()
        #expect(await outcome == .ready(talking.reader))
        // Ready before the wait began: the wait ends at once.
        #expect(await loop.wait(for: .readable, on: [talking.reader]) == .ready(talking.reader))
    }

    @Test func aWritableDescriptorIsReadyAtOnce() async throws {
        let loop = try ReadinessLoop()
        defer { loop.stop() }
        let pipe = Pipe()
        #expect(await loop.wait(for: .writable, on: [pipe.writer]) == .ready(pipe.writer))
    }

    @Test func aWaitPastItsDeadlineTimesOut() async throws {
        let loop = try ReadinessLoop()
        defer { loop.stop() }
        let pipe = Pipe()
        #expect(await loop.wait(for: .readable, on: [pipe.reader], until: .now - .seconds(1)) == .timedOut)
        // The loop goes on: a later wait on the same descriptor ends when it has a byte.
        pipe.send()
        #expect(await loop.wait(for: .readable, on: [pipe.reader]) == .ready(pipe.reader))
    }

    @Test func stoppingEndsEveryWaitAndEveryLaterOne() async throws {
        let loop = try ReadinessLoop()
        let pipe = Pipe()
        async let first = loop.wait(for: .readable, on: [pipe.reader])
        async let second = loop.wait(for: .readable, on: [pipe.reader], until: .now + .seconds(3600))
        loop.stop()
        #expect(await first == .stopped)
        #expect(await second == .stopped)
        #expect(await loop.wait(for: .readable, on: [pipe.reader]) == .stopped)
    }

    @Test func aClosedDescriptorIsReportedReadySoItsCallSaysWhy() async throws {
        let loop = try ReadinessLoop()
        defer { loop.stop() }
        // Far above any descriptor a test process opens, so no test running beside this one can own it.
        let closed: Int32 = 999_999
        #expect(fcntl(closed, F_GETFD) == -1)
        #expect(await loop.wait(for: .readable, on: [closed]) == .ready(closed))
    }
}
