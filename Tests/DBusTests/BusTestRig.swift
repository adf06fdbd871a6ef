import BlueZTesting
import DBus
import Logging
import Synchronization

/// A small exported tree used by most tests: an ObjectManager at /app with a sensor below it.
let sensorInterface = "org.example.Sensor1"

/// A level shared between a property's getter/setter and the test.
final class Level: Sendable {
    let value: Mutex<Int32>
    init(_ initial: Int32) { value = Mutex(initial) }
}

func exportSensor(on server: BusConnection, state: Level) throws {
    try server.addObjectManager(at: "/app")
    try server.export(
        "/app/sensor0",
        [
            Interface(
                sensorInterface,
                methods: [
                    Method("Echo", inputs: "s", outputs: "s") { call in
                        let text = (try? call.arguments[0].asString()) ?? ""
                        call.reply([.string(text)])
                    },
                    Method("WhoAmI", outputs: "s") { call in
                        let sender = call.sender ?? ""
                        call.reply([.string(sender)])
                    },
                    .returning("Add", inputs: "ii", outputs: "i") { arguments, _ in
                        [.int32(try arguments[0].asInt32() + arguments[1].asInt32())]
                    },
                    .returning("Refuse") { _, _ in
                        throw DBusError(name: "org.example.Error.NotPermitted", message: "no")
                    },
                    .returning("Crash") { _, _ in throw MarshalError.invalidValue("not a D-Bus error") },
                    Method("Drop") { call in _ = consume call },
                ],
                properties: [
                    Property("Name", signature: "s", get: { .string("thermo") }),
                    Property(
                        "Level", signature: "i", get: { .int32(state.value.withLock { $0 }) },
                        set: { value in
                            let level = try value.asInt32()
                            state.value.withLock { $0 = level }
                        }),
                ],
                signals: [SignalDescription("Alarm", signature: "s")])
        ])
}

/// A private bus with a server and a client connection, the sensor exported on the server when asked: what most
/// tests start from. `close()` closes both connections (the daemon stops with the bus).
struct BusPair {
    let bus: PrivateBus
    let server: BusConnection
    let client: BusConnection

    /// With `serverLogger`, the server connection logs there instead of the bus's quiet default.
    init(sensorLevel: Int32? = nil, serverLogger: Logger? = nil) throws {
        let bus = try PrivateBus()
        self.bus = bus
        server = try serverLogger.map { try BusConnection(.address(bus.address), logger: $0) } ?? bus.connect("server")
        client = try bus.connect("client")
        if let sensorLevel { try exportSensor(on: server, state: Level(sensorLevel)) }
    }

    func close() {
        client.close()
        server.close()
    }
}

/// Holds a call unanswered: shows that a `MethodCall` can be moved into an actor and kept.
actor Parking {
    private var call: MethodCall?
    func park(_ call: consuming MethodCall) { self.call = consume call }
    var hasCall: Bool { call != nil }
}

/// Counts events from any thread.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
