import GATTModel
@_spi(Backend) import Peripheral
import Synchronization

/// A `PeripheralBackend` with no bus and no radio, like SwiftNIO's `NIOEmbedded`: `VirtualCentral`s connect to it
/// and talk to a real `PeripheralManager`.
///
/// It behaves as bluetoothd does where the manager can tell: subscriptions check the characteristic's properties
/// and CCCD security (bluetoothd's static flags), links have a bounded send buffer that says "would block" and
/// becomes writable as the central consumes notifications (an `AcquireNotify` socket). Reads and writes take the
/// production path, straight to the manager's `RequestRouter` on the central's task, unchecked, so the handler's
/// own checks are what tests see.
public final class InMemoryBackend: PeripheralBackend {
    /// What the manager and the centrals report to each other.
    @_spi(Backend) public let events: AsyncStream<BackendEvent>
    /// How many notifications a link holds before `send` answers `.wouldBlock` (a socket's buffer).
    public let linkCapacity: Int

    private struct Link {
        var central: Central
        var security: SecurityLevel
        var inFlight = 0
        var isBlocked = false
        var autoConfirms: Bool
        var subscriptions: [String: UpdateKind] = [:]
        var delivery: AsyncStream<NotificationQueue.Update>.Continuation
    }

    private struct State {
        var services: [Service] = []
        var advertisement: Advertisement?
        var links: [String: Link] = [:]
    }

    private let state = Mutex(State())
    /// The manager's router, once attached.
    private let router = RouterAttachment()
    private let continuation: AsyncStream<BackendEvent>.Continuation

    /// A backend whose adapter starts in `state`; links buffer `linkCapacity` notifications (at least 1).
    public init(state: PeripheralManagerState = .poweredOn, linkCapacity: Int = 4) {
        self.linkCapacity = max(1, linkCapacity)
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        continuation.yield(.stateChanged(state))
    }

    /// Changes the adapter's state, as a power switch or a bluetoothd restart would.
    public func setState(_ newState: PeripheralManagerState) {
        continuation.yield(.stateChanged(newState))
    }

    /// Ends the event stream: the manager stops.
    public func shutDown() { continuation.finish() }

    /// The services the manager published, in order.
    public var publishedServices: [Service] { state.withLock { $0.services } }

    /// What the manager advertises, or nil.
    public var advertisement: Advertisement? { state.withLock { $0.advertisement } }

    // MARK: PeripheralBackend

    /// Keeps the manager's router: virtual centrals' reads and writes go to it.
    @_spi(Backend) public func attach(_ router: RequestRouter) {
        self.router.attach(router)
    }

    /// Records the service; never fails.
    public func publish(_ service: Service) async throws {
        state.withLock { $0.services.append(service) }
    }

    /// Forgets the service; never fails.
    public func unpublish(_ service: Service) async throws {
        state.withLock { $0.services.removeAll { $0.id == service.id } }
    }

    /// Records the advertisement; never fails.
    public func startAdvertising(_ advertisement: Advertisement) async throws {
        state.withLock { $0.advertisement = advertisement }
    }

    /// Forgets the advertisement; never fails.
    public func stopAdvertising() async throws {
        state.withLock { $0.advertisement = nil }
    }

    /// Disconnects the central (or every connected one) as if the link dropped: its notifications end, so the
    /// `VirtualCentral` sees it, and the manager hears `.disconnected`. Never fails.
    public func disconnect(_ central: Central?) async throws -> [String] {
        let ids = state.withLock { state in
            central.map { state.links[$0.id] == nil ? [] : [$0.id] } ?? state.links.keys.sorted()
        }
        for id in ids { dropLink(of: Central(id: id)) }
        return ids
    }

    /// Whether a central is connected now.
    public func isConnected(_ central: Central) -> Bool { state.withLock { $0.links[central.id] != nil } }

    /// Delivers to the central's notifications unless its link buffer is full (`.wouldBlock`); `.failed` when the
    /// central is not connected.
    @_spi(Backend) public func send(_ update: NotificationQueue.Update, to central: Central) -> SendOutcome {
        state.withLock { state in
            guard var link = state.links[central.id] else { return .failed("\(central) is not connected") }
            guard link.inFlight < linkCapacity else {
                link.isBlocked = true
                state.links[central.id] = link
                return .wouldBlock
            }
            link.inFlight += 1
            state.links[central.id] = link
            link.delivery.yield(update)
            return .sent
        }
    }

    // MARK: What virtual centrals do

    func connect(
        _ central: Central, security: SecurityLevel, autoConfirms: Bool
    ) -> AsyncStream<NotificationQueue.Update> {
        let (stream, delivery) = AsyncStream.makeStream(of: NotificationQueue.Update.self)
        state.withLock { state in
            state.links[central.id]?.delivery.finish()
            state.links[central.id] = Link(
                central: central, security: security, autoConfirms: autoConfirms, delivery: delivery)
            continuation.yield(.connected(central))
        }
        return stream
    }

    func dropLink(of central: Central) {
        state.withLock { state in
            guard let link = state.links.removeValue(forKey: central.id) else { return }
            link.delivery.finish()
            continuation.yield(.disconnected(link.central, reason: nil))
        }
    }

    func setSecurity(_ security: SecurityLevel, for central: Central) {
        state.withLock { $0.links[central.id]?.security = security }
    }

    func security(of central: Central) -> SecurityLevel {
        state.withLock { $0.links[central.id]?.security ?? .none }
    }

    func emit(_ event: BackendEvent) { continuation.yield(event) }

    /// A central's read, to the manager's router as BlueZ hands it.
    func request(_ incoming: consuming IncomingRead) { router.read(incoming) }

    /// A central's writes, to the manager's router as BlueZ hands them.
    func request(_ incoming: consuming IncomingWrites) { router.write(incoming) }

    /// The central's application took a notification off the link: room in the buffer, and the confirmation of an
    /// indication when the central confirms automatically.
    func consumed(_ update: NotificationQueue.Update, by central: Central) {
        state.withLock { state in
            guard var link = state.links[central.id] else { return }
            link.inFlight = max(0, link.inFlight - 1)
            let wasBlocked = link.isBlocked
            link.isBlocked = false
            state.links[central.id] = link
            if update.isIndication && link.autoConfirms { continuation.yield(.confirmed(link.central)) }
            if wasBlocked { continuation.yield(.writable(link.central)) }
        }
    }

    /// Checks a CCCD write as bluetoothd does from the static flags, then reports the subscription.
    func subscribe(_ central: Central, to characteristicID: String, kind: UpdateKind) -> ATTError? {
        state.withLock { state in
            guard var link = state.links[central.id] else { return .unlikelyError }
            guard
                let characteristic = state.services.lazy.flatMap(\.characteristics)
                    .first(where: { $0.id == characteristicID })
            else { return .attributeNotFound }
            let property: CharacteristicProperties = kind == .indication ? .indicate : .notify
            guard characteristic.properties.contains(property) else { return .requestNotSupported }
            let operation: AttributeOperation = kind == .indication ? .indicate : .notify
            if let error = ProfileServer.securityError(
                required: characteristic.effectiveSecurity[operation], linkSecurity: link.security)
            {
                return error
            }
            link.subscriptions[characteristicID] = kind
            state.links[central.id] = link
            continuation.yield(.subscribed(link.central, characteristicID: characteristicID, kind: kind))
            return nil
        }
    }

    func unsubscribe(_ central: Central, from characteristicID: String) {
        state.withLock { state in
            guard state.links[central.id]?.subscriptions.removeValue(forKey: characteristicID) != nil else { return }
            continuation.yield(.unsubscribed(central, characteristicID: characteristicID))
        }
    }
}
