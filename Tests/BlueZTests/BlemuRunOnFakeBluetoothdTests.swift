import BlueZTesting
import ControlProtocol
import DBus
import Emulation
import Foundation
import GATTModel
import Testing

/// The real `blemu run` process against the fake bluetoothd on a private bus: the central's reads and writes go
/// through the fake, the control socket steers, and the event log must account for every request and answer.
@Suite(
    .enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: ChildProcess.blemu), "needs the built blemu"),
    .serialized, .timeLimit(.minutes(2)))
struct BlemuRunOnFakeBluetoothdTests: BlemuRunRig {
    private func send(_ client: ControlClient, _ request: [String: JSONValue]) async throws -> [String: Any] {
        let line = try await blocking { try client.send(request) }
        return (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
    }

    @Test func controlSocketAndEventLogAccountForEveryRequestNotificationAndFault() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, events) = try await steerableHeartRate(on: bus, in: directory)

        // Reads and writes through bluetoothd: a constant, an accepted and a refused control point write. The fake
        // plays 5.83+, which says why a link went down.
        await fake.saysWhyLinksGoDown()
        let central = try await fake.connect(address: "11:22:33:44:55:01")
        #expect(await fake.read("2a38", by: central) == .success([0x01]))
        #expect(await fake.write("2a39", [0x01], by: central) == nil)
        #expect(await fake.write("2a39", [0x02], by: central) == ATTError(rawValue: 0x80))

        // Steered: a value set through the socket is what the central reads; a fault rejects the next read.
        let client = ControlClient(path: control)
        let set = try await send(client, ["command": "set", "id": "battery-level", "hex": "32"])
        #expect(set["ok"] as? Bool == true, "\(set)")
        #expect(await fake.read("2a19", by: central) == .success([0x32]))
        let reject = try await send(
            client, ["command": "fault", "operation": "read", "id": "battery-level", "error": 0x81])
        #expect(reject["ok"] as? Bool == true, "\(reject)")
        #expect(await fake.read("2a19", by: central) == .failure(ATTError(rawValue: 0x81)))

        // Notifications: the heart rate schedule starts at the first subscription, once a second.
        #expect(await fake.subscribe("2a37", by: central) == nil)
        let notification = await first(of: central.notifications, within: .seconds(10))
        #expect(
            notification?.value.count == 2 && notification?.value.first == 0x06, "\(String(describing: notification))")

        // A disconnect fault on the next read: answered, then the link is dropped through Device1.Disconnect.
        let hangUp = try await send(
            client, ["command": "fault", "operation": "read", "nth": 1, "effect": "disconnect"])
        #expect(hangUp["ok"] as? Bool == true, "\(hangUp)")
        #expect(await fake.read("2a38", by: central) == .success([0x01]))
        #expect(await fake.until { !$0.isConnected(central) })
        #expect(await fake.disconnectCalls[central.path] == 1)
        // `centrals` keeps who left, with bluetoothd's reason: blemu asked, so the local host ended the link. The
        // emulator records the disconnect before it logs the event, so once the line is written `centrals` has it.
        #expect(await FileWait.until(events, contains: #""type":"disconnected""#))
        let centrals = try await send(client, ["command": "centrals"])
        let disconnects = centrals["disconnects"] as? [[String: Any]] ?? []
        #expect(disconnects.first?["central"] as? String == central.path.rawValue)
        #expect(disconnects.first?["reason"] as? String == "Local", "\(disconnects)")

        let counters = try await send(client, ["command": "counters"])["counters"] as? [String: Any]
        #expect(
            counters?["requests"] as? Int == 6 && counters?["answered"] as? Int == 6, "\(String(describing: counters))")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        await fake.stop()
        bus.stop()

        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) ?? [:]
        }
        #expect(lines.allSatisfy { $0["time"] is String && $0["type"] is String })
        func of(_ type: String) -> [[String: Any]] { lines.filter { $0["type"] as? String == type } }
        // Requests = answers: one line per answered request, each with its result.
        let requests = of("request")
        #expect(requests.count == 6)
        #expect(
            requests.map { $0["characteristic"] as? String ?? "" } == [
                "body-sensor-location", "heart-rate-control-point", "heart-rate-control-point", "battery-level",
                "battery-level", "body-sensor-location",
            ])
        #expect(requests.compactMap { $0["code"] as? Int } == [0x80, 0x81])
        #expect(requests.filter { $0["result"] as? String == "success" }.count == 4)
        #expect(requests.allSatisfy { $0["central"] as? String == central.path.rawValue })
        #expect(of("notification").contains { $0["characteristic"] as? String == "heart-rate-measurement" })
        #expect(of("subscribed").contains { $0["characteristic"] as? String == "heart-rate-measurement" })
        #expect(of("fault").map { $0["fault"] as? String ?? "" } == ["reject 0x81 Application Error", "disconnect"])
        #expect(of("state").first?["state"] as? String == "poweredOn")
        #expect(of("disconnected").first?["message"] as? String == "Connection terminated by local host")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `disconnect` through the control socket: bluetoothd is asked to end exactly the links named (one central's,
    /// then every other's), and each central leaves as a lost link does, with the local host as the reason.
    @Test func theControlSocketDropsOneCentralsLinkThenEveryOthers() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, events) = try await steerableHeartRate(on: bus, in: directory)
        await fake.saysWhyLinksGoDown()
        let first = try await fake.connect(address: "11:22:33:44:55:01")
        let second = try await fake.connect(address: "11:22:33:44:55:02")
        #expect(await fake.read("2a38", by: first) == .success([0x01]))
        #expect(await fake.read("2a38", by: second) == .success([0x01]))
        let client = ControlClient(path: control)

        let one = try await send(client, ["command": "disconnect", "central": .string(first.path.rawValue)])
        #expect(one["disconnected"] as? [String] == [first.path.rawValue], "\(one)")
        #expect(await fake.until { !$0.isConnected(first) })
        #expect(await fake.isConnected(second))
        #expect(await FileWait.until(events, contains: #""type":"disconnected""#))

        let rest = try await send(client, ["command": "disconnect"])
        #expect(rest["disconnected"] as? [String] == [second.path.rawValue], "\(rest)")
        #expect(await fake.until { !$0.isConnected(second) })
        #expect(await fake.disconnectCalls == [first.path: 1, second.path: 1])
        let centrals = try await send(client, ["command": "centrals"])
        #expect((centrals["centrals"] as? [Any])?.isEmpty == true, "\(centrals)")
        let left = (centrals["disconnects"] as? [[String: Any]] ?? []).map { $0["reason"] as? String ?? "" }
        #expect(left == ["Local", "Local"], "\(centrals)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        await fake.stop()
        bus.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A formatted line per request costs more than answering it, so `blemu run` writes one only with -v;
    /// the event log records the request either way.
    @Test func aRequestIsLoggedOnStderrOnlyWithVerbose() async throws {
        let (bus, fake, directory) = try await rig()
        for verbose in [false, true] {
            let output = directory + "/\(verbose ? "verbose" : "default")"
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            let events = output + "/events.jsonl"
            let run = try await heartRate(on: bus, ["--events", events] + (verbose ? ["-v"] : []), in: output)
            let central = try await fake.connect(address: "11:22:33:44:55:0\(verbose ? 2 : 1)")
            #expect(await fake.read("2a38", by: central) == .success([0x01]))
            run.signal(SIGTERM)
            #expect(await run.exitStatus() == 0, "\(run.stderr)")
            let logged = run.stderr.split(separator: "\n").filter { $0.contains("] read body-sensor-location by ") }
            #expect(logged.count == (verbose ? 1 : 0), "\(run.stderr)")
            if verbose { #expect(logged.first?.contains("-> 1 bytes 01") == true, "\(logged)") }
            let logText = try String(contentsOfFile: events, encoding: .utf8)
            #expect(logText.split(separator: "\n").filter { $0.contains("\"type\":\"request\"") }.count == 1)
        }
        await fake.stop()
        bus.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The Python package (python/) against the real `blemu run`: its own unittest suite, none skipped.
    @Test func thePythonPackagesTestsPassAgainstARunningBlemu() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, events) = try await steerableHeartRate(on: bus, in: directory)
        defer { withExtendedLifetime(fake) {} }  // bluetoothd stays on the bus until blemu has stopped
        try FileManager.default.createDirectory(atPath: directory + "/python", withIntermediateDirectories: true)
        let python = try ChildProcess(
            "/usr/bin/env",
            [
                "PYTHONPATH=\(ChildProcess.repositoryRoot)/python/src", "BLEMU_TEST_CONTROL=\(control)",
                "BLEMU_TEST_EVENTS=\(events)", "PYTHONDONTWRITEBYTECODE=1", "/usr/bin/python3", "-m", "unittest",
                "discover", "-v", "-s", ChildProcess.repositoryRoot + "/python/tests",
            ], outputIn: directory + "/python")
        let status = await python.exitStatus()
        #expect(status == 0, "\(python.stderr)")
        #expect(python.stderr.contains("Ran 19 tests") && python.stderr.contains("\nOK\n"), "\(python.stderr)")
        #expect(!python.stderr.contains("skipped"), "\(python.stderr)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// An agent's MCP client: the official Python SDK starts `blemu mcp` over stdio against this `blemu run`,
    /// lists the tools, sets, waits for the notification a notify sends and reads an error (python/tests-mcp).
    /// Needs the `mcp` package in the venv scripts/setup --lab makes (python/requirements-test.txt).
    @Test(.enabled(if: Self.venvHasMCP, "needs the mcp package in scripts/setup --lab's venv"))
    func anMCPClientDrivesTheRunningDeviceThroughBlemuMcp() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, _) = try await steerableHeartRate(on: bus, in: directory)
        defer { withExtendedLifetime(fake) {} }  // bluetoothd stays on the bus until blemu has stopped
        try FileManager.default.createDirectory(atPath: directory + "/mcp", withIntermediateDirectories: true)
        let client = try ChildProcess(
            "/usr/bin/env",
            [
                "PYTHONDONTWRITEBYTECODE=1", Self.venvPython,
                ChildProcess.repositoryRoot + "/python/tests-mcp/mcp_client.py", "--blemu", ChildProcess.blemu,
                "--control", control,
            ], outputIn: directory + "/mcp")
        let status = await client.exitStatus()
        #expect(status == 0, "\(client.stdout)\(client.stderr)")
        #expect(client.stdout.contains("mcp client: 7 checks passed, 0 failed"), "\(client.stdout)\(client.stderr)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Whether the venv has the MCP SDK: the `mcp` package in its site-packages.
    static let venvHasMCP: Bool = {
        let lib = URL(fileURLWithPath: venvPython).deletingLastPathComponent().deletingLastPathComponent().path + "/lib"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []
        return versions.contains {
            FileManager.default.fileExists(atPath: "\(lib)/\($0)/site-packages/mcp/__init__.py")
        }
    }()

    /// Outside the lab the pytest fixture starts `blemu run` itself for the session and stops it cleanly
    /// (everything unregistered). Needs pytest: the venv scripts/setup --lab makes.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: Self.venvPython), "needs scripts/setup --lab's venv"))
    func thePytestFixtureStartsBlemuRunForTheSessionAndStopsItCleanly() async throws {
        let (bus, fake, directory) = try await rig()
        defer { withExtendedLifetime(fake) {} }
        let tests = directory + "/test_strap.py"
        try """
        def test_the_fixture_serves_the_profile(blemu_peripheral):
            assert blemu_peripheral.get("battery-level").fields == {"percent": 87}
            blemu_peripheral.pause_schedules("battery-level")
            assert blemu_peripheral.counters().unanswered == 0
        """.write(toFile: tests, atomically: true, encoding: .utf8)
        let pytest = try ChildProcess(
            "/usr/bin/env",
            [
                "PYTHONPATH=\(ChildProcess.repositoryRoot)/python/src", "PYTHONDONTWRITEBYTECODE=1", Self.venvPython,
                "-m", "pytest", "-p", "no:cacheprovider", "--blemu-profile",
                ChildProcess.repositoryRoot + "/profiles/heart-rate.yaml", "--blemu", ChildProcess.blemu,
                "--blemu-bus", bus.address, tests,
            ], outputIn: directory)
        let status = await pytest.exitStatus()
        #expect(status == 0, "\(pytest.stdout)\(pytest.stderr)")
        #expect(pytest.stdout.contains("1 passed"), "\(pytest.stdout)")
        #expect(await fake.until { $0.applications.isEmpty }, "still registered")
        #expect(await fake.advertisements.isEmpty, "the advertisement is still registered")
        // A profile blemu refuses: the fixture says blemu run exited, with blemu's own `file:line:col` message.
        let broken = directory + "/broken.yaml"
        try "name: X\nservices:\n  - uuid: not-a-uuid\n".write(toFile: broken, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: directory + "/refused", withIntermediateDirectories: true)
        let refused = try ChildProcess(
            "/usr/bin/env",
            [
                "PYTHONPATH=\(ChildProcess.repositoryRoot)/python/src", "PYTHONDONTWRITEBYTECODE=1", Self.venvPython,
                "-m", "pytest", "-p", "no:cacheprovider", "--blemu-profile", broken, "--blemu", ChildProcess.blemu,
                "--blemu-bus", bus.address, tests,
            ], outputIn: directory + "/refused")
        #expect(await refused.exitStatus() == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stdout.contains("blemu run exited with 65"), "\(refused.stdout)")
        #expect(refused.stdout.contains("broken.yaml:3:"), "\(refused.stdout)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `blemu ctl SOCK events --follow` prints each event as it happens, flushed; `ctl reset` puts a set value back
    /// and is one of them; `--follow` with another command is a usage error (only `events` has the option).
    @Test func ctlFollowsTheEventsAndResetsTheDevice() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, _) = try await steerableHeartRate(on: bus, in: directory)
        defer { withExtendedLifetime(fake) {} }
        func ctl(_ arguments: String...) async throws -> ChildProcess {
            let output = directory + "/ctl-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            return try ChildProcess(ChildProcess.blemu, ["ctl", control] + arguments, outputIn: output)
        }
        let follow = try await ctl("events", "--follow")
        // Its first line says the peripheral follows for it: every event after that reaches it.
        let following = await FileWait.until(follow.stdoutPath, contains: #""following":true"#)
        #expect(following, "\(follow.stderr)")
        let set = try await ctl("set", "battery-level", "14")
        #expect(await set.exitStatus() == 0, "\(set.stderr)")
        let reset = try await ctl("reset")
        #expect(await reset.exitStatus() == 0, "\(reset.stderr)")
        #expect(reset.stdout.contains(#""changed":["battery-level"]"#), "\(reset.stdout)")
        let streamed = await FileWait.until(follow.stdoutPath, contains: #""type":"reset""#)
        #expect(streamed, "\(follow.stdout)")
        let lines = follow.stdout.split(separator: "\n")
        #expect(lines.count >= 2 && lines.dropFirst().allSatisfy { $0.hasPrefix(#"{"time":""#) }, "\(follow.stdout)")
        follow.signal(SIGINT)
        _ = await follow.exitStatus()
        let misuse = try await ctl("counters", "--follow")
        #expect(await misuse.exitStatus() == 64, "\(misuse.stderr)")
        #expect(misuse.stderr.contains("Unknown option '--follow'"), "\(misuse.stderr)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The pytest plugin tested as a plugin: python/tests/plugin_test.py runs pytest (pytester) on test files that use
    /// the fixtures against this `blemu run`, presented as the lab presents its peripherals. Needs the venv's pytest.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: Self.venvPython), "needs scripts/setup --lab's venv"))
    func thePytestPluginsOwnTestsPassAgainstARunningBlemu() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, _) = try await steerableHeartRate(on: bus, in: directory)
        defer { withExtendedLifetime(fake) {} }
        let pytest = try ChildProcess(
            "/usr/bin/env",
            [
                "PYTHONPATH=\(ChildProcess.repositoryRoot)/python/src", "BLEMU_TEST_CONTROL=\(control)",
                "PYTHONDONTWRITEBYTECODE=1", Self.venvPython, "-m", "pytest", "-p", "pytester", "-p",
                "no:cacheprovider", "-q", ChildProcess.repositoryRoot + "/python/tests/plugin_test.py",
            ], outputIn: directory)
        let status = await pytest.exitStatus()
        #expect(status == 0, "\(pytest.stdout)\(pytest.stderr)")
        #expect(pytest.stdout.contains("6 passed"), "\(pytest.stdout)")
        #expect(!pytest.stdout.contains("skipped"), "\(pytest.stdout)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The Python package and the pytest example are typed: `mypy --strict` finds nothing (the venv's mypy,
    /// python/requirements-test.txt).
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(
                atPath: URL(fileURLWithPath: Self.venvPython).deletingLastPathComponent().path + "/mypy"),
            "needs scripts/setup --lab's venv with mypy"))
    func thePythonPackageAndThePytestExampleTypeCheckStrictly() async throws {
        let directory = "/tmp/blemu-mypy-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let root = ChildProcess.repositoryRoot
        let mypy = try ChildProcess(
            "/usr/bin/env",
            [
                "MYPYPATH=\(root)/python/src", Self.venvPython, "-m", "mypy", "--strict", "--cache-dir",
                directory + "/cache", root + "/python/src", root + "/python/tests/plugin_test.py",
                root + "/examples/pytest-bleak/test_device.py",
            ], outputIn: directory)
        #expect(await mypy.exitStatus() == 0, "\(mypy.stdout)\(mypy.stderr)")
        #expect(mypy.stdout.contains("Success: no issues found"), "\(mypy.stdout)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The venv `scripts/setup --lab` makes (`<cache>/venv`), with pytest and bleak.
    static let venvPython: String = {
        let environment = ProcessInfo.processInfo.environment
        let cache =
            environment["BLEMU_CACHE"]
            ?? (environment["XDG_CACHE_HOME"].map { $0 + "/blemu" } ?? NSHomeDirectory() + "/.cache/blemu")
        return cache + "/venv/bin/python"
    }()

    @Test func aReaderOfTheEventsThatGoesAwayCostsLinesNotTheDevice() async throws {
        // `blemu run --events - | head -3`: head exits, and blemu must keep serving and stop cleanly.
        let (bus, fake, directory) = try await rig()
        let pipe = directory + "/stdout.txt"
        #expect(mkfifo(pipe, 0o600) == 0)
        // Close-on-exec, or blemu would inherit a reader of its own stdout and never meet a broken pipe.
        let reader = open(pipe, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        let run = try await heartRate(on: bus, ["--events", "-"], in: directory, saysOnStderr: true)
        // The first line wakes the poll; blemu holds the writer's end, so its going would be a hang-up (no lines).
        let gotLines = try await blocking {
            var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
            var buffer = [UInt8](repeating: 0, count: 4096)
            return poll(&descriptor, 1, 10_000) > 0 && read(reader, &buffer, buffer.count) > 0
        }
        #expect(gotLines, "no event line on stdout")
        close(reader)

        let central = try await fake.connect(address: "11:22:33:44:55:02")
        for _ in 0..<20 { #expect(await fake.read("2a38", by: central) == .success([0x01])) }
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        #expect(run.stderr.contains("stopped: 20 requests, 20 answered"), "\(run.stderr)")
        #expect(run.stderr.contains("event log: Broken pipe"), "\(run.stderr)")
        #expect(run.stderr.contains("lines lost; writing failed: Broken pipe"), "\(run.stderr)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `blemu run --events FIFO` whose reader stopped reading: the writer is stuck in write(2), and SIGTERM must
    /// still end the run within about two seconds, answering every request and counting the lines never written.
    @Test func aStalledReaderOfTheEventsDoesNotHoldTheStop() async throws {
        let (bus, fake, directory) = try await rig()
        let events = directory + "/events.fifo"
        #expect(mkfifo(events, 0o600) == 0)
        // Opened first so blemu's open does not wait for a reader; never read. One page of pipe fills in a few lines.
        let reader = open(events, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        defer { close(reader) }
        _ = fcntl(reader, 1031, 4096)  // F_SETPIPE_SZ (linux/fcntl.h), not exported to Swift
        let run = try await heartRate(on: bus, ["--events", events], in: directory)

        let central = try await fake.connect(address: "11:22:33:44:55:03")
        for _ in 0..<60 { #expect(await fake.read("2a38", by: central) == .success([0x01])) }
        let started = ContinuousClock.now
        run.signal(SIGTERM)
        // A hang ends as SIGKILL (137) after 10 s, so the test fails instead of waiting for its time limit.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(10))
            run.signal(SIGKILL)
        }
        let status = await run.exitStatus()
        watchdog.cancel()
        #expect(status == 0, "\(run.stderr)")
        #expect(ContinuousClock.now - started < .seconds(4), "the stop waited for the reader")
        #expect(run.stdout.contains("stopped: 60 requests, 60 answered"), "\(run.stdout)")
        #expect(
            run.stderr.contains("lines lost; writing failed: nothing was read for 1.5 s at shutdown"), "\(run.stderr)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A second `blemu run` given the control path of a live one refuses before it touches bluetoothd: the first
    /// keeps the only application and advertisement, and the refusal names the path once.
    @Test func aSecondRunOnALiveControlPathRefusesBeforeRegisteringAnything() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, _) = try await steerableHeartRate(on: bus, in: directory)
        let registrations = await fake.advertisementRegistrations
        try FileManager.default.createDirectory(atPath: directory + "/second", withIntermediateDirectories: true)
        let second = try ChildProcess(
            ChildProcess.blemu,
            [
                "run", ChildProcess.repositoryRoot + "/profiles/heart-rate.yaml", "--bus", bus.address, "--control",
                control,
            ],
            outputIn: directory + "/second")
        #expect(await second.exitStatus() == 69, "\(second.stderr)")
        #expect(
            second.stderr.contains(
                "blemu: control socket \(control): another blemu is serving this control socket; stop it first"),
            "\(second.stderr)")
        #expect(second.stderr.components(separatedBy: control).count == 2, "the path is named more than once")
        #expect(await fake.advertisementRegistrations == registrations, "the second copy advertised")
        #expect(await fake.applications.count == 1, "the second copy registered an application")
        let answer = try await send(ControlClient(path: control), ["command": "counters"])
        #expect(answer["ok"] as? Bool == true, "the first run lost its control socket: \(answer)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A passkey the stack displays is what a test must type on its central: it is in the event log and
    /// in `ctl pairing`; a passkey asked of a profile that has none is refused and said.
    @Test func pairingStepsAreLoggedAndReadableOverTheControlSocket() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, events) = try await steerableHeartRate(on: bus, in: directory)
        let agent = try #require(await fake.agent, "blemu registered no agent")
        let device = DBusValue.objectPath(ObjectPath(stringLiteral: "/org/bluez/hci0/dev_11_22_33_44_55_08"))
        _ = try await fake.callApp(
            agent.owner, agent.path, "org.bluez.Agent1", "DisplayPasskey", [device, .uint32(4213), .uint16(0)])
        _ = try await fake.callApp(
            agent.owner, agent.path, "org.bluez.Agent1", "DisplayPasskey", [device, .uint32(4213), .uint16(1)])
        await #expect(throws: DBusError.self) {
            _ = try await fake.callApp(agent.owner, agent.path, "org.bluez.Agent1", "RequestPasskey", [device])
        }
        // The agent reports each step as it answers; the emulator keeps it a moment later, and logs it as it does.
        let isKept = await FileWait.until(events, contains: #""method":"request-passkey""#)
        #expect(isKept)
        let answer = try await send(ControlClient(path: control), ["command": "pairing"])
        let pairings = answer["pairings"] as? [[String: Any]] ?? []
        #expect(pairings.count == 2, "\(answer)")  // a keypress update is not a new step
        #expect(pairings.first?["method"] as? String == "display-passkey")
        #expect(pairings.first?["passkey"] as? String == "004213")
        #expect(pairings.first?["central"] as? String == "/org/bluez/hci0/dev_11_22_33_44_55_08")
        #expect(
            pairings.last?["method"] as? String == "request-passkey" && pairings.last?["accepted"] as? Bool == false)
        let log = try String(contentsOfFile: events, encoding: .utf8)
        #expect(log.contains(#""type":"pairing""#) && log.contains(#""passkey":"004213""#), "\(log)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// SIGTERM while a delay fault holds a read used to abandon it to bluetoothd's timeout.
    @Test func aReadHeldByADelayFaultIsAnsweredBeforeTheRunStops() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, events) = try await steerableHeartRate(on: bus, in: directory)
        let fault = try await send(
            ControlClient(path: control),
            ["command": "fault", "operation": "read", "id": "battery-level", "delayMs": 8000])
        #expect(fault["ok"] as? Bool == true)
        let central = try await fake.connect(address: "11:22:33:44:55:07")
        let started = ContinuousClock.now
        async let held = fake.read("2a19", by: central)
        let isHeld = await FileWait.until(events, contains: #""fault":"delay"#)
        #expect(isHeld)
        run.signal(SIGTERM)
        #expect(await held == .success([87]))
        #expect(ContinuousClock.now - started < .seconds(7), "the read waited for its delay")
        #expect(await run.exitStatus() == 0)
        #expect(run.stdout.contains("stopped: 1 requests, 1 answered"), "\(run.stdout)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `blemu run` with its options first is blemu-cli's to parse; it hands them back to blemu, replacing
    /// itself, so a script's process id, its signals and the exit code reach the process that serves.
    @Test func aRunBlemuCLIParsesIsServedByBlemuUnderTheProcessIDItWasStartedWith() async throws {
        let (bus, fake, directory) = try await rig()
        let run = try ChildProcess(
            ChildProcess.blemu,
            [
                "run", "--bus", bus.address, "-v", "--adapter=hci0",
                ChildProcess.repositoryRoot + "/profiles/heart-rate.yaml",
            ],
            outputIn: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #require(
            await FileWait.until(run.stdoutPath, contains: "advertising \"", within: .seconds(30)), "\(run.stderr)")
        let name = try String(contentsOfFile: "/proc/\(run.pid)/comm", encoding: .utf8)
        #expect(name == "blemu\n")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        #expect(await fake.applications.isEmpty, "the application is still registered")
    }

    /// Both hand-overs (blemu to blemu-cli, and blemu-cli's `run` back to blemu) exec from the process's first thread:
    /// from any other, the kernel retires the first thread and /proc/PID/stat says Z until the caller takes the
    /// process id over, and the lab's guest stack took a fleet's peripheral for dead in that window (5.82, CI).
    /// strace marks such an exec "superseded by execve in pid N".
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace"), "needs strace"))
    func everyHandOverExecsFromTheFirstThread() async throws {
        let directory = "/tmp/blemu-run-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trace = directory + "/execve.txt"
        let run = try ChildProcess(
            "/usr/bin/strace",
            [
                "-f", "-e", "trace=execve", "-o", trace, ChildProcess.blemu, "run", "--bus", "unix:path=/nonexistent",
                ChildProcess.repositoryRoot + "/profiles/heart-rate.yaml",
            ],
            outputIn: directory)
        #expect(await run.exitStatus() == 69, "\(run.stderr)")
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
        #expect(lines.filter { $0.contains("execve(") && $0.contains("= 0") }.count == 3, "\(lines)")
        #expect(!lines.contains { $0.contains("superseded by execve") }, "\(lines.joined(separator: "\n"))")
    }

    @Test(arguments: [SIGHUP, SIGQUIT, SIGINT])
    func everyStopSignalUnregistersAndExitsCleanly(signal: Int32) async throws {
        let (bus, fake, directory) = try await rig()
        let run = try await heartRate(on: bus, [], in: directory)
        #expect(await fake.advertisements.count == 1)
        run.signal(signal)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        #expect(run.stdout.contains("stopped: "), "\(run.stdout)")
        #expect(await fake.advertisements.isEmpty, "the advertisement is still registered")
        #expect(await fake.applications.isEmpty, "the application is still registered")
        try? FileManager.default.removeItem(atPath: directory)
    }
}
