import BlueZ
import DBus
import GATTModel
import GATTProfile
import Glibc
import Logging
import Peripheral
import Synchronization

/// The "blemu library" contender of the GATT benchmark: `BlueZBackend` + `PeripheralManager` used directly, with a
/// handler that serves Benchmarks/profiles/bench.yaml from a `ProfileServer` and adds the benchmark's control point (a write of
/// `u32 LE N` sends N notifications on `notify`; a read returns how many writes without response arrived).
///   gatt-blemu-lib PROFILE        (the bus is $DBUS_SYSTEM_BUS_ADDRESS, as for any app talking to bluetoothd)
/// With `BLEMU_BENCH_NOTIFY=properties` it offers no AcquireNotify, so a real bluetoothd notifies through
/// PropertiesChanged (Benchmarks/run-lab measures both paths).
@main
struct BlemuLibContender {
    static func main() async throws {
        guard CommandLine.arguments.count == 2 else {
            printError("usage: gatt-blemu-lib PROFILE")
            exit(64)
        }
        let result = ProfileLoader.load(path: CommandLine.arguments[1])
        guard let profile = result.profile, !result.hasErrors else {
            printError(result.renderedDiagnostics)
            exit(65)
        }
        var logger = Logger(label: "gatt-blemu-lib")
        logger.logLevel = .warning
        let backend = try await BlueZBackend(
            bus: .system, adapter: "hci0",
            options: BlueZOptions(
                pairing: profile.pairing, deviceName: profile.name,
                useAcquireNotify: getenv("BLEMU_BENCH_NOTIFY").map { String(cString: $0) } != "properties"),
            logger: logger)
        let handler = BenchHandler(server: ProfileServer(logger: logger))
        let manager = PeripheralManager(backend: backend, handler: handler, logger: logger)
        handler.attach(manager, notify: profile.services.flatMap(\.characteristics).first { $0.id == "notify" })
        let events = manager.events
        Task {
            for await event in events where event == .readyToUpdateSubscribers { handler.ready.yield() }
        }
        try await manager.waitUntilPoweredOn()
        for service in profile.services { try await manager.publish(service) }
        try await manager.startAdvertising(profile.advertisement)
        print("advertising")
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// `ProfileServer` plus the benchmark's control point and write counter.
final class BenchHandler: RequestHandler {
    let server: ProfileServer
    let writesWithoutResponse = Atomic<Int>(0)
    let target = Mutex<(PeripheralManager, Characteristic)?>(nil)
    let ready: AsyncStream<Void>.Continuation
    let readiness: AsyncStream<Void>

    init(server: ProfileServer) {
        self.server = server
        (readiness, ready) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func attach(_ manager: PeripheralManager, notify: Characteristic?) {
        guard let notify else { return }
        target.withLock { $0 = (manager, notify) }
    }

    func handleRead(_ request: consuming ReadRequest) async { _ = answerAtOnce(request) }

    func handleWrites(_ requests: consuming WriteRequests) async { _ = answerAtOnce(requests) }

    /// Every request is answered here, as `ProfileServer` answers: none needs to wait, so none needs a task.
    func answerAtOnce(_ request: consuming ReadRequest) -> ReadRequest? {
        if request.characteristic.id == "control" {
            let count = UInt32(truncatingIfNeeded: writesWithoutResponse.load(ordering: .relaxed))
            request.respond(with: withUnsafeBytes(of: count.littleEndian) { Array($0) })
        } else {
            server.answer(request)
        }
        return nil
    }

    func answerAtOnce(_ requests: consuming WriteRequests) -> WriteRequests? {
        let received = requests.requests.count { $0.characteristic.id == "wnr" }
        if received > 0 { writesWithoutResponse.add(received, ordering: .relaxed) }
        if let control = requests.requests.first(where: { $0.characteristic.id == "control" }), control.value.count >= 4
        {
            let count = control.value.prefix(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            requests.respond()
            Task { await self.burst(count) }
            return nil
        }
        server.answer(requests)
        return nil
    }

    /// Sends `count` notifications, waiting for `.readyToUpdateSubscribers` whenever the queue is full: Core
    /// Bluetooth's back-pressure contract, which is what keeps the loss at zero.
    func burst(_ count: Int) async {
        guard let (manager, notify) = target.withLock({ $0 }) else { return }
        var waiting = readiness.makeAsyncIterator()
        for sequence in 0..<count {
            var value = [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: 20)
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: sequence).littleEndian) { raw in
                for (index, byte) in raw.enumerated() { value[index] = byte }
            }
            while !(await manager.updateValue(value, for: notify)) {
                guard await waiting.next() != nil else { return }
            }
        }
    }
}

func printError(_ text: String) { _ = (text + "\n").withCString { write(2, $0, strlen($0)) } }
