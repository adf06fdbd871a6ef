import Synchronization

/// The event log's live side, for the control socket's `events`: the latest records, and every record from now on
/// handed to each follower as it is recorded, in the order recorded.
///
/// `publish` runs where the event happened (the D-Bus loop thread for a request's answer) and never blocks: it
/// appends to a fixed ring and to each follower's bounded backlog, and wakes a follower with one byte on its pipe
/// only when the backlog was empty. A follower that does not keep up loses the records past its backlog and is told
/// how many (`EventFollower.take`), as the event log's file tells a slow reader.
public final class EventFeed: Sendable {
    /// How many of the latest records `recent` keeps.
    public static let recentCapacity = 256

    private struct State {
        /// The latest records, oldest first once `next` wraps: a ring of `recentCapacity`.
        var ring: [EventRecord] = []
        /// Where the next record goes once the ring is full.
        var next = 0
        var followers: [ObjectIdentifier: EventFollower] = [:]
    }

    private let state = Mutex(State())

    /// A feed with nothing recorded and no follower.
    public init() {}

    /// Keeps `record` among the latest and hands it to every follower. Offered inside the lock, so every follower
    /// sees records in one order, the order `recent` has them.
    func publish(_ record: EventRecord) {
        state.withLock { state in
            if state.ring.count < Self.recentCapacity {
                state.ring.append(record)
            } else {
                state.ring[state.next] = record
                state.next = (state.next + 1) % Self.recentCapacity
            }
            for follower in state.followers.values { follower.offer(record) }
        }
    }

    /// The latest records, oldest first (at most `recentCapacity`).
    public var recent: [EventRecord] {
        state.withLock { Array($0.ring[$0.next...] + $0.ring[..<$0.next]) }
    }

    /// A follower that gets every record published from now on; `unfollow` it when done. Throws
    /// `EventFollower.PipeError` when no pipe can be made (out of descriptors).
    public func follow() throws(EventFollower.PipeError) -> EventFollower {
        let follower = try EventFollower()
        state.withLock { $0.followers[ObjectIdentifier(follower)] = follower }
        return follower
    }

    /// Stops handing records to `follower`.
    public func unfollow(_ follower: EventFollower) {
        _ = state.withLock { $0.followers.removeValue(forKey: ObjectIdentifier(follower)) }
    }

    /// How many followers there are now.
    public var followerCount: Int { state.withLock { $0.followers.count } }
}
