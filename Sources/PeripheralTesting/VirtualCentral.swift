import GATTModel
@_spi(Backend) import Peripheral

/// A central in memory, connected to an `InMemoryBackend`: reads, writes, subscribes and receives updates as a
/// phone would, and sees ATT errors as thrown `ATTError`s.
///
/// Reads are cut to ATT_MTU - 1 bytes per response as on the air, so `readLong` takes several reads at increasing
/// offsets; writes longer than ATT_MTU - 3 become a prepared (long) write, one batch answered once.
public final class VirtualCentral: Sendable {
    /// The central as the peripheral sees it.
    public let central: Central
    /// The negotiated ATT_MTU.
    public let attMTU: Int
    /// Updates as they arrive, in order; each one taken frees room on the link (and confirms an indication when
    /// the central confirms automatically). One consumer.
    public let notifications: Notifications
    private let backend: InMemoryBackend

    /// Connects a central with this id, MTU and link security; with `autoConfirms`, indications are confirmed as
    /// they are taken from `notifications`, else call `confirm()`.
    public init(
        connectingTo backend: InMemoryBackend, id: String = "central", attMTU: Int = Central.defaultATTMTU,
        security: SecurityLevel = .none, autoConfirms: Bool = true
    ) {
        self.backend = backend
        self.attMTU = max(Central.defaultATTMTU, attMTU)
        central = Central(id: id, attMTU: self.attMTU)
        notifications = Notifications(
            stream: backend.connect(central, security: security, autoConfirms: autoConfirms), central: central,
            backend: backend)
    }

    /// The link's security now.
    public var security: SecurityLevel { backend.security(of: central) }

    /// Pairs (or re-pairs) to reach `level`: later requests carry it.
    public func pair(_ level: SecurityLevel) { backend.setSecurity(level, for: central) }

    /// Whether the link is up: false after `disconnect()` or after the peripheral dropped it.
    public var isConnected: Bool { backend.isConnected(central) }

    /// Disconnects: queued updates for this central are dropped (and counted) by the manager.
    public func disconnect() { backend.dropLink(of: central) }

    /// Reads one response's worth of a characteristic's value from `offset` (at most ATT_MTU - 1 bytes);
    /// throws the ATT error the peripheral answered.
    public func read(_ characteristicID: String, offset: Int = 0) async throws(ATTError) -> [UInt8] {
        let central = central
        let security = security
        let result = await withCheckedContinuation { (waiter: CheckedContinuation<Result<[UInt8], ATTError>, Never>) in
            backend.request(
                IncomingRead(
                    central: central, characteristicID: characteristicID, offset: offset, linkSecurity: security,
                    reply: ClosureReply { waiter.resume(returning: $0) }))
        }
        // A Read (Blob) Response carries at most ATT_MTU - 1 bytes (Core Spec Vol 3, Part F, 3.4.4.4).
        return try result.map { Array($0.prefix(attMTU - 1)) }.get()
    }

    /// Reads a whole value with Read Blob requests at increasing offsets, as a central does for long values.
    public func readLong(_ characteristicID: String) async throws(ATTError) -> [UInt8] {
        var value: [UInt8] = []
        while true {
            let part = try await read(characteristicID, offset: value.count)
            value += part
            if part.count < attMTU - 1 { return value }
        }
    }

    /// Writes a value; with `withResponse`, waits for the answer and throws its ATT error. A value longer than one
    /// Write Request carries (ATT_MTU - 3) goes as a long write: prepared parts at increasing offsets, one batch.
    /// Without response, returns at once and never sees an error (as on the air).
    public func write(
        _ value: [UInt8], to characteristicID: String, offset: Int = 0, withResponse: Bool = true
    ) async throws(ATTError) {
        guard withResponse else {
            backend.request(
                IncomingWrites(
                    central: central, writes: [.init(characteristicID: characteristicID, offset: offset, value: value)],
                    linkSecurity: security, reply: nil))
            return
        }
        var writes: [IncomingWrites.Write] = []
        if value.count <= attMTU - 3 {
            writes = [.init(characteristicID: characteristicID, offset: offset, value: value)]
        } else {
            // Prepare Write Request parts carry ATT_MTU - 5 bytes each (Core Spec Vol 3, Part F, 3.4.6.1).
            var start = 0
            repeat {
                let part = Array(value[start..<min(value.count, start + attMTU - 5)])
                writes.append(.init(characteristicID: characteristicID, offset: offset + start, value: part))
                start += part.count
            } while start < value.count
        }
        try await send(writes)
    }

    /// Writes several characteristics as one reliable write: all applied or none, one answer.
    public func writeReliably(_ writes: [(characteristicID: String, value: [UInt8])]) async throws(ATTError) {
        try await send(writes.map { .init(characteristicID: $0.characteristicID, offset: 0, value: $0.value) })
    }

    /// Subscribes to notifications, or indications; throws the ATT error bluetoothd would answer the CCCD write
    /// with (no such property, insufficient encryption or authentication). The manager's `subscribed` event follows.
    public func subscribe(to characteristicID: String, indications: Bool = false) throws(ATTError) {
        if let error = backend.subscribe(central, to: characteristicID, kind: indications ? .indication : .notification)
        {
            throw error
        }
    }

    /// Unsubscribes; updates still queued for it are dropped (and counted) by the manager.
    public func unsubscribe(from characteristicID: String) {
        backend.unsubscribe(central, from: characteristicID)
    }

    /// Confirms the indication in flight, for a central created without `autoConfirms`.
    public func confirm() { backend.emit(.confirmed(central)) }

    private func send(_ writes: [IncomingWrites.Write]) async throws(ATTError) {
        let central = central
        let security = security
        let result = await withCheckedContinuation { (waiter: CheckedContinuation<Result<[UInt8], ATTError>, Never>) in
            backend.request(
                IncomingWrites(
                    central: central, writes: writes, linkSecurity: security,
                    reply: ClosureReply { waiter.resume(returning: $0) }))
        }
        _ = try result.get()
    }
}

/// The updates a `VirtualCentral` receives, in order; taking one frees room on the link.
public struct Notifications: AsyncSequence, Sendable {
    /// One update: characteristic id, bytes, and whether it was an indication.
    public typealias Element = NotificationQueue.Update
    /// Never throws.
    public typealias Failure = Never

    let stream: AsyncStream<NotificationQueue.Update>
    let central: Central
    let backend: InMemoryBackend

    /// The iterator; ends when the central disconnects.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<NotificationQueue.Update>.AsyncIterator
        let central: Central
        let backend: InMemoryBackend

        /// The next update, or nil after the central disconnected.
        public mutating func next() async -> NotificationQueue.Update? {
            guard let update = await base.next() else { return nil }
            backend.consumed(update, by: central)
            return update
        }

        /// The next update, in the caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> NotificationQueue.Update? {
            guard let update = await base.next(isolation: actor) else { return nil }
            backend.consumed(update, by: central)
            return update
        }
    }

    /// An iterator over the updates; make only one.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), central: central, backend: backend)
    }
}
