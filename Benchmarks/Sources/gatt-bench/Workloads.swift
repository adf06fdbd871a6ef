import DBus
import Glibc
import Synchronization

/// One running contender as the fake sees it: the workloads drive its characteristics as bluetoothd would.
struct Target: Sendable {
    let contender: Contender
    let child: Child
    let application: FakeBluetoothd.Application
    let fake: FakeBluetoothd

    var connection: BusConnection { fake.connection }
    func path(_ role: Role) -> ObjectPath? {
        contender.roles[role].flatMap { application.characteristics[$0.lowercased()] }
    }
}

struct RoundTrip: Codable, Sendable {
    var calls = 0
    var errors = 0
    var perSecond = 0.0
    var p50Microseconds = 0.0
    var p99Microseconds = 0.0
    /// The contender's CPU time (every thread) per answered call: steadier than the rate on a busy machine.
    var cpuMicrosecondsPerCall = 0.0
    /// The contender's resident set (`VmRSS`) right after the workload, in kB.
    var rssKilobytesAfter: Int? = nil
    var note: String? = nil
}

struct Delivery: Codable, Sendable {
    var sent = 0
    var received = 0
    var perSecond = 0.0
    var lost: Int { sent - received }
    /// The contender's resident set (`VmRSS`) right after the workload, in kB.
    var rssKilobytesAfter: Int? = nil
    var note: String? = nil
    /// How many times the app's count was asked for (`writesReceived`), so the instruction count can take out
    /// what the asking cost the app.
    var polls = 0
}

let characteristicInterface = "org.bluez.GattCharacteristic1"
/// The options bluetoothd 5.66 sends with every request (src/gatt-database.c `append_options`; `offset` only when
/// non-zero).
let requestOptions = options(device: FakeBluetoothd.device)

func options(device: ObjectPath) -> DBusValue {
    .vardict(["device": .objectPath(device), "mtu": .uint16(517), "link": .string("LE")])
}

/// The request options of `count` different centrals, as bluetoothd names each connected device.
func centralOptions(_ count: Int) -> [DBusValue] {
    guard count > 1 else { return [requestOptions] }
    return (0..<count).map { index in
        let low = String(index % 256, radix: 16, uppercase: true)
        let high = String(index / 256, radix: 16, uppercase: true)
        let device =
            "/org/bluez/hci0/dev_00_11_22_33_\(high.count < 2 ? "0" + high : high)_\(low.count < 2 ? "0" + low : low)"
        return options(device: ObjectPath(stringLiteral: device))
    }
}

func payload(_ size: Int, sequence: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: size)
    withUnsafeBytes(of: UInt32(truncatingIfNeeded: sequence).littleEndian) { raw in
        for (index, byte) in raw.enumerated() where index < size { bytes[index] = byte }
    }
    return bytes
}

extension Target {
    /// ReadValue or WriteValue round trips for `duration` seconds with `inFlight` calls outstanding, from `centrals`
    /// different devices in turn (bluetoothd calls with the `device` option of whoever sent the ATT request).
    func roundTrips(
        write: Bool, role: Role, size: Int, inFlight: Int, seconds: Double, centrals: Int = 1
    ) async -> RoundTrip {
        guard let path = path(role) else { return RoundTrip(note: "n/a: no characteristic for \(role.rawValue)") }
        let destination = application.sender
        let connection = connection
        let value = DBusValue.bytes(payload(size, sequence: 7))
        let devices = centralOptions(centrals)
        // The value read must have the size under test: write it once first (a no-op for fixed-size apps).
        _ = try? await connection.call(
            destination, path: path, interface: characteristicInterface, member: "WriteValue",
            arguments: [value, requestOptions], timeout: .seconds(5))
        let deadline = monotonic() + UInt64(seconds * 1e9)
        let cpuBefore = cpuNanoseconds(of: child.pid)
        let start = monotonic()
        let outcome = await withTaskGroup(of: (UInt64, String?).self) { group in
            var latencies: [UInt64] = []
            var errors = 0
            var firstError: String?
            var launched = 0
            func launch() {
                let requestOptions = devices[launched % devices.count]
                launched += 1
                group.addTask {
                    let began = monotonic()
                    do {
                        if write {
                            _ = try await connection.call(
                                destination, path: path, interface: characteristicInterface, member: "WriteValue",
                                arguments: [value, requestOptions], timeout: .seconds(10))
                        } else {
                            let reply = try await connection.call(
                                destination, path: path, interface: characteristicInterface, member: "ReadValue",
                                arguments: [requestOptions], timeout: .seconds(10))
                            let count = (try? reply.first?.asBytes())?.count ?? -1
                            guard count == size else { return (0, "read \(count) bytes, expected \(size)") }
                        }
                        return (monotonic() - began, nil)
                    } catch {
                        return (0, "\(error)")
                    }
                }
            }
            for _ in 0..<inFlight { launch() }
            while let (latency, error) = await group.next() {
                if let error {
                    errors += 1
                    if firstError == nil { firstError = error }
                } else {
                    latencies.append(latency)
                }
                if monotonic() < deadline && errors < 100 { launch() }
            }
            return (latencies.sorted(), errors, firstError)
        }
        let elapsed = Double(monotonic() - start) / 1e9
        let cpu = nanoseconds(from: cpuBefore, to: cpuNanoseconds(of: child.pid))
        let latencies = outcome.0
        var result = RoundTrip(calls: latencies.count, errors: outcome.1, note: outcome.2)
        guard !latencies.isEmpty else { return result }
        result.perSecond = Double(latencies.count) / elapsed
        result.cpuMicrosecondsPerCall = Double(cpu) / 1e3 / Double(latencies.count)
        result.rssKilobytesAfter = child.currentRSS()
        func percentile(_ p: Double) -> Double {
            Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1e3
        }
        result.p50Microseconds = percentile(0.5)
        result.p99Microseconds = percentile(0.99)
        return result
    }

    /// How many writes without response the app has received so far, or nil when it cannot tell.
    func writesReceived() async -> Int? {
        switch contender.writeCount {
        case .none: return nil
        case .controlPoint:
            guard let path = path(.control),
                let reply = try? await connection.call(
                    application.sender, path: path, interface: characteristicInterface, member: "ReadValue",
                    arguments: [requestOptions], timeout: .seconds(10)),
                let bytes = try? reply.first?.asBytes(), bytes.count >= 4
            else { return nil }
            return Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
        case .controlCounters:
            guard let socket = contender.controlSocket else { return nil }
            return await controlCounter(socket, key: "writesWithoutResponse")
        }
    }

    /// `count` WriteValue calls with the no-reply flag, as bluetoothd sends write-without-response; the rate is what
    /// the app received per second until the last one arrived (or nothing more came for a second).
    func writesWithoutResponse(count: Int) async -> Delivery {
        guard let path = path(.wnr) else { return Delivery(note: "n/a: no write-without-response characteristic") }
        if case .none(let why) = contender.writeCount { return Delivery(note: why) }
        guard let before = await writesReceived() else { return Delivery(note: "the app's count cannot be read") }
        let start = monotonic()
        for sequence in 0..<count {
            do {
                try connection.callWithoutReply(
                    application.sender, path: path, interface: characteristicInterface, member: "WriteValue",
                    arguments: [.bytes(payload(20, sequence: sequence)), requestOptions])
            } catch {
                return Delivery(sent: sequence, note: "\(error)")
            }
        }
        var received = 0
        var polls = 1
        var lastProgress = monotonic()
        while received < count {
            try? await Task.sleep(for: .milliseconds(10))
            polls += 1
            let now = await writesReceived().map { $0 - before } ?? received
            if now > received {
                received = now
                lastProgress = monotonic()
            } else if monotonic() - lastProgress > 2_000_000_000 {
                break
            }
        }
        let seconds = Double(lastProgress - start) / 1e9
        return Delivery(
            sent: count, received: received, perSecond: seconds > 0 ? Double(received) / seconds : 0,
            rssKilobytesAfter: child.currentRSS(), polls: polls)
    }

    /// Subscribes through `StartNotify` (PropertiesChanged) or `AcquireNotify` (a SEQPACKET socket), asks the app
    /// for `count` notifications through the control point, and counts what arrives.
    func notifications(acquire: Bool, count: Int) async -> Delivery {
        if let why = contender.noTrigger { return Delivery(note: why) }
        guard let path = self.path(.notify), let control = self.path(.control) else {
            return Delivery(note: "n/a: no notify or control characteristic")
        }
        let sender = application.sender
        let tally = Tally()
        var socket: Int32 = -1
        var subscription: SignalSubscription?
        if acquire {
            // bluetoothd 5.66 calls AcquireNotify only on characteristics exposing NotifyAcquired (gatt-database.c).
            guard let uuid = contender.roles[.notify], application.notifyAcquired.contains(uuid.lowercased()) else {
                return Delivery(note: "n/a: no NotifyAcquired property, so bluetoothd would use StartNotify only")
            }
            do {
                let reply = try await connection.call(
                    sender, path: path, interface: characteristicInterface, member: "AcquireNotify",
                    arguments: [requestOptions], timeout: .seconds(10))
                guard case .unixFD(let fd)? = reply.first else { return Delivery(note: "AcquireNotify: no fd") }
                socket = fd.rawValue
            } catch {
                return Delivery(note: "AcquireNotify: \(error)")
            }
        } else {
            do {
                subscription = try await connection.subscribe(
                    MatchRule(
                        sender: sender, path: path, interface: "org.freedesktop.DBus.Properties",
                        member: "PropertiesChanged", arg0: characteristicInterface)
                ) { signal in
                    guard signal.arguments.count >= 2, let changed = try? signal.arguments[1].asVardict(),
                        changed["Value"] != nil
                    else { return }
                    tally.add()
                }
                _ = try await connection.call(
                    sender, path: path, interface: characteristicInterface, member: "StartNotify",
                    timeout: .seconds(10))
            } catch {
                subscription?.cancel()
                return Delivery(note: "StartNotify: \(error)")
            }
        }
        let connection = connection
        let start = monotonic()
        tally.last.store(start, ordering: .relaxed)
        let socketPath = contender.controlSocket
        let trigger = Task {
            if let socketPath {
                // `blemu run`: one `notify` command per notification on its control socket, as a script would.
                if let failure = await notifyThroughControlSocket(socketPath, id: "notify", count: count) {
                    throw BenchError(failure)
                }
                return
            }
            _ = try await connection.call(
                sender, path: control, interface: characteristicInterface, member: "WriteValue",
                arguments: [.bytes(payload(4, sequence: count)), requestOptions], timeout: .seconds(20))
        }
        if acquire {
            // bluetoothd reads the socket as the link allows; here as fast as it can, one datagram per notification.
            var buffer = [UInt8](repeating: 0, count: 1024)
            while tally.count.load(ordering: .relaxed) < count {
                var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 100) > 0 {
                    let got = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if got > 0 { tally.add() } else if got == 0 { break }
                } else if tally.idle(longerThan: 2_000_000_000) {
                    break
                }
            }
        } else {
            while tally.count.load(ordering: .relaxed) < count
                && !tally.idle(longerThan: 2_000_000_000)
            {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        var note: String?
        if case .failure(let error) = await trigger.result { note = "control point write: \(error)" }
        let received = tally.count.load(ordering: .relaxed)
        let seconds = Double(nanoseconds(from: start, to: tally.last.load(ordering: .relaxed))) / 1e9
        if acquire {
            close(socket)
        } else {
            subscription?.cancel()
            _ = try? await connection.call(
                sender, path: path, interface: characteristicInterface, member: "StopNotify", timeout: .seconds(5))
        }
        try? await Task.sleep(for: .milliseconds(50))
        return Delivery(
            sent: count, received: received, perSecond: seconds > 0 ? Double(received) / seconds : 0,
            rssKilobytesAfter: child.currentRSS(), note: note)
    }
}

/// A counter bumped on the D-Bus loop thread and read by the workload.
final class Tally: Sendable {
    let count = Atomic<Int>(0)
    let last = Atomic<UInt64>(0)
    func add() {
        count.add(1, ordering: .relaxed)
        last.store(monotonic(), ordering: .relaxed)
    }
    /// Whether nothing has arrived for more than `limit` nanoseconds. The signal thread can store a time newer than
    /// the clock read here, so the difference saturates at zero.
    func idle(longerThan limit: UInt64) -> Bool {
        nanoseconds(from: last.load(ordering: .relaxed), to: monotonic()) > limit
    }
}
