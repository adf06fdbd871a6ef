import Emulation
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The event log's live side: the latest records for `events`, and followers that are woken, not polled.
@Suite struct EventFeedTests {
    /// Records mark `number` in `log`, which hands it to its feed as `blemu run` does.
    static func mark(_ number: Int, in log: EventLog) {
        log.record(.fault("mark \(number)", characteristicID: nil))
    }

    /// Whether `fd` is readable now (a follower's pipe says records wait).
    static func isReadable(_ fd: Int32) -> Bool {
        var watched = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&watched, 1, 0) == 1
    }

    @Test func recentKeepsTheLatestInOrder() {
        let log = EventLog()
        for number in 1...300 { Self.mark(number, in: log) }
        let recent = log.feed.recent
        #expect(recent.count == EventFeed.recentCapacity)
        #expect(recent.first?.event == .fault("mark 45", characteristicID: nil))
        #expect(recent.last?.event == .fault("mark 300", characteristicID: nil))
    }

    @Test func aFollowerIsWokenByItsPipeAndTakesWhatCameSinceItBegan() throws {
        let log = EventLog()
        let feed = log.feed
        Self.mark(0, in: log)
        let follower = try feed.follow()
        #expect(!Self.isReadable(follower.wakeDescriptor))
        Self.mark(1, in: log)
        Self.mark(2, in: log)
        #expect(Self.isReadable(follower.wakeDescriptor))
        let taken = follower.take()
        #expect(taken.records.map(\.event) == [1, 2].map { .fault("mark \($0)", characteristicID: nil) })
        #expect(taken.dropped == 0)
        #expect(!Self.isReadable(follower.wakeDescriptor), "taking empties the pipe")
        feed.unfollow(follower)
        Self.mark(3, in: log)
        #expect(follower.take().records.isEmpty)
        #expect(feed.followerCount == 0)
    }

    @Test func aFollowerThatFallsBehindLosesTheNewestAndIsToldHowMany() throws {
        let log = EventLog()
        let follower = try log.feed.follow()
        for number in 1...(EventFollower.maximumBacklog + 5) { Self.mark(number, in: log) }
        let taken = follower.take()
        #expect(taken.records.count == EventFollower.maximumBacklog)
        #expect(taken.records.last?.event == .fault("mark \(EventFollower.maximumBacklog)", characteristicID: nil))
        #expect(taken.dropped == 5)
    }
}

/// `events` on the control socket: the latest records, and a stream of each one as it is recorded.
@Suite struct ControlEventsTests {
    @Test func eventsListsTheLatestAndFollowStreamsEachEventAsItIsRecorded() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        _ = try await offPool { try client.send(["command": "reset"]) }
        let listed = object(try await offPool { try client.send(["command": "events"]) })
        let types = (listed["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
        #expect(types.last == "reset", "\(listed)")

        // The stream, read on a thread of its own until two `reset` lines recorded after it began have come.
        let (lines, continuation) = AsyncStream.makeStream(of: String.self)
        let reader = Task {
            try await offPool {
                defer { continuation.finish() }
                var resets = 0
                try client.stream(["command": "events", "follow": true]) { line in
                    continuation.yield(line)
                    if line.contains(#""type":"reset""#) { resets += 1 }
                    return resets < 2
                }
            }
        }
        var received = lines.makeAsyncIterator()
        let first = object(await received.next() ?? "")
        #expect(first["ok"] as? Bool == true && first["following"] as? Bool == true, "\(first)")
        await rig.emulator.reset()
        _ = try await offPool { try client.send(["command": "set", "id": "battery-level", "hex": "20"]) }
        await rig.emulator.reset()
        var streamed: [[String: Any]] = []
        while let line = await received.next() { streamed.append(object(line)) }
        try await reader.value
        let resets = streamed.filter { $0["type"] as? String == "reset" }
        #expect(resets.map { $0["changed"] as? [String] } == [[], ["battery-level"]], "\(streamed)")
        // Every streamed line is an event-log line: a time and a type, in the order recorded.
        #expect(streamed.allSatisfy { $0["time"] is String && $0["type"] is String }, "\(streamed)")
        #expect(streamed.last?["type"] as? String == "reset", "\(streamed)")

        let refused = object(try await offPool { try client.send(["command": "events", "follow": "yes"]) })
        #expect(refused["ok"] as? Bool == false, "\(refused)")
    }
}
