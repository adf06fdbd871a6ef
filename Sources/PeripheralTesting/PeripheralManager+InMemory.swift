import GATTModel
import Logging
@_spi(Backend) import Peripheral

extension PeripheralManager {
    /// A powered-on manager over a fresh `InMemoryBackend`, with `services` published: the first line of a test.
    /// Logs nothing unless given a logger; with `restoring`, `.willRestoreState` is the first event; request deadlines
    /// run on `clock` (a `ManualClock` lets a test advance past them).
    /// Throws what `publish` throws (a duplicate id, typically).
    public static func inMemory(
        publishing services: [Service], handler: any RequestHandler = ProfileServer(),
        configuration: Configuration = Configuration(), linkCapacity: Int = 4,
        restoring restoredState: RestoredState? = nil, clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "blemu.peripheral.test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws(PeripheralError) -> (manager: PeripheralManager, backend: InMemoryBackend) {
        let backend = InMemoryBackend(linkCapacity: linkCapacity)
        let manager = PeripheralManager(
            backend: backend, handler: handler, configuration: configuration, restoring: restoredState,
            clock: clock, logger: logger)
        try await manager.waitUntilPoweredOn()
        for service in services { try await manager.publish(service) }
        return (manager, backend)
    }

    /// The next event that matches, waiting for it; nil if the manager stops first. Events before it are skipped.
    public nonisolated func nextEvent(where matches: (PeripheralEvent) -> Bool) async -> PeripheralEvent? {
        for await event in events where matches(event) { return event }
        return nil
    }
}
