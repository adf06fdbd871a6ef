import ControlProtocol
import Emulation
import Foundation
import GATTModel
import LocalIO
import Peripheral
import PeripheralTesting
import Synchronization
import Testing

/// A fresh directory under /tmp, short enough for a Unix socket path.
func temporaryDirectory() throws -> String {
    let path = "/tmp/blemu-test-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A fresh directory holding one file, `name` with `text`, for replays; the caller removes it.
func temporaryDirectory(holding name: String, _ text: String) throws -> String {
    let directory = try temporaryDirectory()
    try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    return directory
}

/// Runs blocking socket I/O on a thread of its own. On a 2-core machine Swift's cooperative pool has two threads:
/// two tests blocked in read() on a reply that the emulator actor must produce would hold both, and the actor
/// could never run. Seen as a whole-suite hang in CI-like runs.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// A raw client socket connected to `server` (the descriptor, or -1 when it cannot connect), for tests that do
/// what `ControlClient` never does: stay silent, or never read.
func connected(to server: ControlServer) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0, SocketCalls.unixAddress(server.path).map({ SocketCalls.connect(fd, to: $0) }) == true else {
        if fd >= 0 { close(fd) }
        return -1
    }
    return fd
}

func object(_ line: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
}

/// A started heart-rate rig with its control socket listening in a fresh directory, and a client of it; the caller
/// stops the server.
func controlledHeartRate() async throws -> (rig: Rig, server: ControlServer, client: ControlClient) {
    let rig = try await Rig(try bundledProfile("heart-rate"))
    await rig.start()
    let server = ControlServer(path: try temporaryDirectory() + "/control.sock", emulator: rig.emulator)
    try server.start()
    return (rig, server, ControlClient(path: server.path))
}

@Suite struct ControlServerTests {
    @Test func controlSocketGetsSetsCountsAndSurvivesBadLines() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        await rig.start()
        let directory = try temporaryDirectory()
        let server = ControlServer(path: directory + "/control.sock", emulator: rig.emulator)
        try server.start()
        defer { server.stop() }
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "battery-level")
        let client = ControlClient(path: server.path)

        let got = object(try await offPool { try client.send(["command": "get", "id": "battery-level"]) })
        #expect(got["ok"] as? Bool == true && got["hex"] as? String == "57")
        #expect((got["fields"] as? [String: Any])?["percent"] as? Int == 87)

        let set = object(
            try await offPool { try client.send(["command": "set", "id": "battery-level", "fields": ["percent": 50]]) })
        #expect(set["ok"] as? Bool == true && set["hex"] as? String == "32")
        var updates = central.notifications.makeAsyncIterator()
        #expect(await updates.next()?.bytes == [50])
        #expect(try await central.read("battery-level") == [50])

        // A Write Command (answered by bluetoothd, never by blemu) is counted apart.
        try await central.write([0x01], to: "heart-rate-control-point", withResponse: false)
        let counters =
            object(try await offPool { try client.send(["command": "counters"]) })["counters"] as? [String: Any]
        #expect(
            counters?["requests"] as? Int == 2 && counters?["answered"] as? Int == 2, "\(String(describing: counters))")
        #expect(counters?["writesWithoutResponse"] as? Int == 1, "\(String(describing: counters))")

        let unknown = object(try await offPool { try client.send(["command": "get", "id": "nope"]) })
        #expect(unknown["ok"] as? Bool == false && (unknown["error"] as? String)?.contains("nope") == true)
        #expect(!ControlClient.isOK(try await offPool { try client.send(line: "{not json") }))
        #expect(!ControlClient.isOK(try await offPool { try client.send(["command": "fly"]) }))
    }

    @Test func controlFaultWithTheDisconnectEffectDropsTheCentralAfterAnswering() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let bad = object(
            try await offPool { try client.send(["command": "fault", "operation": "read", "effect": "explode"]) })
        #expect(bad["ok"] as? Bool == false && (bad["error"] as? String)?.contains("explode") == true)
        let ok = try await offPool {
            try client.send(["command": "fault", "operation": "read", "nth": 1, "effect": "disconnect"])
        }
        #expect(ControlClient.isOK(ok))
        let central = VirtualCentral(connectingTo: rig.backend)
        #expect(try await central.read("body-sensor-location") == [0x01])
        _ = await rig.recorder.next { if case .disconnected = $0 { true } else { false } }
        #expect(!central.isConnected)
    }

    @Test func disconnectDropsOneCentralOrEveryOneAndRefusesOneNotConnected() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let first = VirtualCentral(connectingTo: rig.backend, id: "/org/bluez/hci0/dev_00_AA_01_00_00_01")
        let second = VirtualCentral(connectingTo: rig.backend, id: "/org/bluez/hci0/dev_00_AA_01_00_00_02")
        // A read each, answered, so the manager has heard both connections.
        #expect(try await first.read("body-sensor-location") == [0x01])
        #expect(try await second.read("body-sensor-location") == [0x01])
        let stranger = object(
            try await offPool { try client.send(["command": "disconnect", "central": "/org/bluez/hci0/dev_nobody"]) })
        #expect(stranger["ok"] as? Bool == false)
        #expect((stranger["error"] as? String)?.contains("is not connected (connected: ") == true, "\(stranger)")
        #expect(first.isConnected && second.isConnected)

        let one = object(
            try await offPool { try client.send(["command": "disconnect", "central": .string(first.central.id)]) })
        #expect(one["ok"] as? Bool == true && one["disconnected"] as? [String] == [first.central.id], "\(one)")
        _ = await rig.recorder.next { if case .disconnected = $0 { true } else { false } }
        #expect(!first.isConnected && second.isConnected)

        let rest = object(try await offPool { try client.send(["command": "disconnect"]) })
        #expect(rest["ok"] as? Bool == true && rest["disconnected"] as? [String] == [second.central.id], "\(rest)")
        _ = await rig.recorder.next { if case .disconnected = $0 { true } else { false } }
        #expect(!second.isConnected)
        // With nobody connected there is nothing to drop, and that is no error.
        let none = object(try await offPool { try client.send(["command": "disconnect"]) })
        #expect(none["ok"] as? Bool == true && none["disconnected"] as? [String] == [], "\(none)")
    }

    @Test func notifyWithACountSendsTheValueThatManyTimesAndRefusesABadCount() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "battery-level")
        let sent = object(
            try await offPool { try client.send(["command": "notify", "id": "battery-level", "count": 3]) })
        #expect(sent["ok"] as? Bool == true)
        var updates = central.notifications.makeAsyncIterator()
        for _ in 0..<3 { #expect(await updates.next()?.bytes == [87]) }
        for bad in [0, 100_001] {
            let refused = object(
                try await offPool {
                    try client.send(["command": "notify", "id": "battery-level", "count": .integer(Int64(bad))])
                })
            #expect(refused["ok"] as? Bool == false && (refused["error"] as? String)?.contains("count") == true)
        }
    }

    /// `set` used to be overwritten by the profile's schedule within a second; a paused schedule
    /// leaves the set value alone until `resume`.
    @Test func aPausedScheduleKeepsTheValueATestSetUntilItResumes() async throws {
        let (rig, server, client) = try await controlledHeartRate()
        defer { server.stop() }
        let central = VirtualCentral(connectingTo: rig.backend)
        try await rig.subscribe(central, to: "heart-rate-measurement")
        var updates = central.notifications.makeAsyncIterator()
        func send(_ request: [String: JSONValue]) async throws -> [String: Any] {
            object(try await offPool { try client.send(request) })
        }

        let paused = try await send(["command": "schedules", "action": "pause", "id": "heart-rate-measurement"])
        let listed = paused["schedules"] as? [[String: Any]] ?? []
        #expect(listed.first { $0["id"] as? String == "heart-rate-measurement" }?["paused"] as? Bool == true)
        #expect(listed.first { $0["id"] as? String == "battery-level" }?["paused"] as? Bool == false)
        _ = try await send(["command": "set", "id": "heart-rate-measurement", "fields": ["bpm": 150]])
        #expect(await updates.next()?.bytes.last == 150)
        rig.clock.advance(by: .seconds(5))
        _ = try await send(["command": "notify", "id": "heart-rate-measurement"])
        // Had the schedule ticked, its random walk (55...110) would have come first.
        #expect(await updates.next()?.bytes.last == 150)

        let resumed = try await send(["command": "schedules", "action": "resume", "id": "heart-rate-measurement"])
        let running = (resumed["schedules"] as? [[String: Any]] ?? []).first {
            $0["id"] as? String == "heart-rate-measurement"
        }
        #expect(running?["paused"] as? Bool == false && running?["running"] as? Bool == true)
        rig.clock.advance(by: .seconds(1))
        #expect((55...110).contains(await updates.next()?.bytes.last ?? 0))

        let unknown = try await send(["command": "schedules", "action": "pause", "id": "body-sensor-location"])
        #expect(unknown["ok"] as? Bool == false && (unknown["error"] as? String)?.contains("no schedule") == true)
        let badAction = try await send(["command": "schedules", "action": "stop"])
        #expect(badAction["ok"] as? Bool == false)
    }

    @Test func badJSONKeepsTheConnectionOpen() async throws {
        let (_, server, _) = try await controlledHeartRate()
        defer { server.stop() }
        // Two lines on one connection: the first is garbage, the second still gets its answer.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(SocketCalls.connect(fd, to: try #require(SocketCalls.unixAddress(server.path))))
        let request = Array("{oops\n{\"command\":\"get\",\"id\":\"body-sensor-location\"}\n".utf8)
        #expect(request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == request.count)
        let received: [UInt8] = try await offPool {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1024)
            while received.filter({ $0 == UInt8(ascii: "\n") }).count < 2 {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                received += buffer[..<count]
            }
            return received
        }
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(object(lines[0])["ok"] as? Bool == false)
        #expect(object(lines[1])["hex"] as? String == "01")
    }
}

/// The control socket against what a shell and a second copy do to it (README.md, "Reliability").
@Suite(.serialized) struct ControlSocketTests {
    @Test func theSocketIsTheOwnersAloneWhateverTheUmask() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        let server = ControlServer(path: try temporaryDirectory() + "/u.sock", emulator: rig.emulator)
        let previous = umask(0)
        defer { umask(previous) }
        try server.start()
        defer { server.stop() }
        var status = stat()
        #expect(stat(server.path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
    }

    /// Idle clients used to hold descriptors and threads without bound. Past the cap a client is told
    /// why and closed; a silent one is closed after the idle timeout, and its slot serves the next.
    @Test func connectionsPastTheCapAreToldWhyAndSilentOnesAreClosed() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        let server = ControlServer(
            path: try temporaryDirectory() + "/cap.sock", emulator: rig.emulator, maximumConnections: 2,
            idleTimeout: .milliseconds(500))
        try server.start()
        defer { server.stop() }
        /// Everything the server sends until it closes, and whether it closed (end of file) rather than 5 s passing.
        @Sendable func untilClosed(_ fd: Int32) -> (text: String, closed: Bool) {
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { return (String(decoding: received, as: UTF8.self), count == 0) }
                received += buffer[..<count]
            }
        }
        // One accept loop takes connections in the order they were made (a listening socket's queue is FIFO) and
        // admits each before the next accept: the third is past the cap however soon it comes.
        let idle = [connected(to: server), connected(to: server)]
        defer { idle.forEach { close($0) } }
        let third = connected(to: server)
        let refusal = try await offPool { untilClosed(third).text }
        close(third)
        #expect(refusal.contains("too many control connections (2 open)") && refusal.contains(#""ok":false"#))
        // The two silent ones are closed by the server after 0.5 s: read returns end of file, not the 5 s timeout.
        let silent = try await offPool { untilClosed(idle[0]) }
        #expect(silent.text.isEmpty && silent.closed, "\(silent)")
        let answer = try await offPool { try ControlClient(path: server.path).send(["command": "counters"]) }
        #expect(ControlClient.isOK(answer))
    }

    /// A client that sends requests and never reads the answers fills its socket; the server waits for room at most
    /// the idle timeout, then closes the connection, instead of a thread blocking in a write for ever. The slot
    /// serves the next client.
    @Test func aClientThatNeverReadsItsAnswersIsClosedAfterTheIdleTimeout() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        let server = ControlServer(
            path: try temporaryDirectory() + "/deaf.sock", emulator: rig.emulator, maximumConnections: 1,
            idleTimeout: .milliseconds(300))
        try server.start()
        defer { server.stop() }
        let deaf = connected(to: server)
        defer { close(deaf) }
        #expect(deaf >= 0)
        _ = fcntl(deaf, F_SETFL, fcntl(deaf, F_GETFL) | O_NONBLOCK)
        let request = Array(#"{"command":"counters"}"#.utf8) + [0x0A]
        // Requests until the sockets are full both ways: the server, unable to answer, stops reading.
        let hungUp = try await offPool { () -> Bool in
            var pending = 0
            while true {
                let count = request.withUnsafeBytes { send(deaf, $0.baseAddress! + pending, $0.count - pending, 0) }
                if count > 0 {
                    pending = (pending + count) % request.count
                    continue
                }
                guard count < 0, errno == EAGAIN else { return false }
                // Full: wait (5 s at most) for the server to hang up, without reading a byte.
                var watched = pollfd(fd: deaf, events: Int16(POLLOUT), revents: 0)
                guard poll(&watched, 1, 5_000) == 1 else { return false }
                if watched.revents & Int16(POLLHUP) != 0 { return true }
            }
        }
        #expect(hungUp)
        let answer = try await offPool { try ControlClient(path: server.path).send(["command": "counters"]) }
        #expect(ControlClient.isOK(answer))
    }

    @Test func aSecondServerDoesNotTakeThePathFromALiveOneButReplacesAStaleOne() async throws {
        let rig = try await Rig(try bundledProfile("heart-rate"))
        let path = try temporaryDirectory() + "/twice.sock"
        let first = ControlServer(path: path, emulator: rig.emulator)
        try first.start()
        let second = ControlServer(path: path, emulator: rig.emulator)
        #expect(throws: ControlServer.StartError.self) { try second.start() }
        // The first still answers: the refused start took nothing from it.
        let answer = try await offPool { try ControlClient(path: path).send(["command": "counters"]) }
        #expect(ControlClient.isOK(answer))
        first.stop()
        // A socket file nobody serves (a crashed run's) is replaced.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(SocketCalls.unixAddress(path).map { SocketCalls.bind(stale, to: $0) } == true)
        close(stale)
        try second.start()
        second.stop()
    }
}
