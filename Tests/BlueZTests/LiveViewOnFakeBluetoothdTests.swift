import BlueZTesting
import ControlProtocol
import Emulation
import Foundation
import LocalIO
import Testing

/// `blemu ui` beside a real `blemu run` on the fake bluetoothd: the page, the WebSocket that follows the device and
/// carries the page's commands, and who is refused (a wrong token, a foreign Host or Origin), spoken by hand as a
/// browser and an attacker's page would; then a real headless Chromium drives the page.
@Suite(
    .enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: ChildProcess.blemu + "-cli"), "needs blemu-cli"),
    .serialized, .timeLimit(.minutes(3)))
struct LiveViewOnFakeBluetoothdTests: BlemuRunRig {
    /// `blemu ui` on a free loopback port (or `listen`) for `control`, awaited until it prints its URL; run under
    /// `wrapper` (a program that then runs blemu, such as prlimit) when given.
    private func view(
        _ control: String, _ options: [String] = [], listen: String = "127.0.0.1:0", in directory: String,
        wrapper: [String] = []
    ) async throws -> (process: ChildProcess, port: UInt16, url: String) {
        let output = directory + "/ui-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let command = wrapper + [ChildProcess.blemu, "ui", "--control", control, "--listen", listen] + options
        let ui = try ChildProcess(command[0], Array(command.dropFirst()), outputIn: output)
        let listening = await FileWait.until(ui.stdoutPath, contains: "Ctrl-C to stop", within: .seconds(20))
        try #require(listening, "blemu ui did not start:\n\(ui.stdout)\n\(ui.stderr)")
        let (url, port) = try address(in: ui.stdout)
        return (ui, port, url)
    }

    /// The first `http://` URL in `text` (the line `blemu ui: URL (device: SOCK); ...`), and its port.
    private func address(in text: String) throws -> (url: String, port: UInt16) {
        let url = try #require(text.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init), "\(text)")
        let port = try #require(url.split(separator: ":").last.flatMap { UInt16($0.prefix { $0.isNumber }) })
        return (url, port)
    }

    /// `blemu run --ui`'s view: the line it printed, its port, and its process (the run's child).
    private func viewBeside(_ run: ChildProcess) async throws -> (line: String, port: UInt16, pid: Int32) {
        let listening = await FileWait.until(run.stdoutPath, contains: "blemu ui: http", within: .seconds(20))
        let line = try #require(
            run.stdout.split(separator: "\n").first { $0.hasPrefix("blemu ui: ") }, "\(listening) \(run.stdout)")
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init)
            .filter { pid in
                let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
                return stat.split(separator: ")").last?.split(separator: " ").dropFirst().first == "\(run.pid)"
            }
        return (String(line), try address(in: String(line)).port, try #require(children.first, "no child of blemu run"))
    }

    private func object(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    /// Messages from `socket` until one satisfies `matches`, for at most `limit`; nil if none did.
    private func message(
        from socket: PlainHTTP, within limit: Duration, _ matches: @escaping @Sendable ([String: Any]) -> Bool
    ) async throws -> [String: Any]? {
        let text = try await blocking { () throws -> String? in
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline {
                let text = try socket.receiveText()
                let message = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
                if matches(message) { return text }
            }
            return nil
        }
        return text.map(object)
    }

    @Test func theViewFollowsTheDeviceCarriesThePagesCommandsAndRefusesStrangers() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, events) = try await steerableHeartRate(on: bus, in: directory)
        defer { withExtendedLifetime(fake) {} }
        let (ui, port, url) = try await view(control, ["--events", events, "--ui-token", "t0k3n"], in: directory)
        #expect(url == "http://127.0.0.1:\(port)/?token=t0k3n")
        let host = "127.0.0.1:\(port)"

        // The page, with the token once: it comes back with the cookie that carries the token from then on.
        let page = try await blocking { try PlainHTTP(port: port).get("/?token=t0k3n", headers: ["Host": host]) }
        #expect(page.status == 200, "\(page)")
        #expect(page.headers["set-cookie"] == "blemu-ui-\(port)=t0k3n; Path=/; HttpOnly; SameSite=Strict")
        #expect(page.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
        let cookie = "blemu-ui-\(port)=t0k3n"
        let script = try await blocking {
            try PlainHTTP(port: port).get("/app.js", headers: ["Host": host, "Cookie": cookie])
        }
        #expect(script.status == 200 && script.headers["content-type"]?.hasPrefix("text/javascript") == true)

        // Refused: no token, a wrong one, another Host (DNS rebinding), another Origin (a cross-site WebSocket).
        let refusals: [(String, [String: String], String)] = [
            ("/app.js", ["Host": host], "wrong or missing token"),
            ("/?token=guess", ["Host": host], "wrong or missing token"),
            ("/?token=t0k3n", ["Host": "attacker.example:\(port)"], "foreign origin refused"),
            ("/ws", PlainHTTP.upgrade(host: host, origin: "http://attacker.example", cookie: cookie), "foreign origin"),
            ("/ws", PlainHTTP.upgrade(host: host, origin: "http://\(host)"), "wrong or missing token"),
        ]
        for (path, headers, reason) in refusals {
            let response = try await blocking { try PlainHTTP(port: port).get(path, headers: headers) }
            #expect(response.status == 403 && response.body.contains(reason), "\(path) \(headers): \(response)")
        }

        // The page's WebSocket: the whole state first.
        let socket = try PlainHTTP(port: port)
        let upgraded = try await blocking {
            try socket.get("/ws", headers: PlainHTTP.upgrade(host: host, origin: "http://\(host)", cookie: cookie))
        }
        try #require(upgraded.status == 101, "\(upgraded)")
        let snapshot = try #require(
            try await message(from: socket, within: .seconds(5)) { $0["type"] as? String == "snapshot" })
        #expect((snapshot["profile"] as? [String: Any])?["name"] as? String == "Polar H10 A1B2")
        let status = snapshot["status"] as? [String: Any] ?? [:]
        #expect(status["state"] as? String == "poweredOn" && status["adapter"] as? String == "hci0", "\(status)")
        let battery = (snapshot["values"] as? [String: Any])?["battery-level"] as? [String: Any]
        #expect((battery?["fields"] as? [String: Any])?["percent"] as? Int == 87, "\(battery ?? [:])")

        // A value set through the control socket reaches the page within a second.
        let client = ControlClient(path: control)
        let setAt = ContinuousClock.now
        _ = try await blocking { try client.send(["command": "set", "id": "battery-level", "hex": "2A"]) }
        let update = try await message(from: socket, within: .seconds(1)) { message in
            ((message["values"] as? [String: Any])?["battery-level"] as? [String: Any])?["hex"] as? String == "2A"
        }
        #expect(update != nil, "no update with battery-level 2A within 1 s")
        print("live view: a set value reached the page in \(ContinuousClock.now - setAt)")

        // The page's commands are the control protocol's, each answered to the page with its seq.
        let before = try await blocking { try client.send(["command": "counters"]) }
        try socket.sendText(#"{"type":"command","seq":7,"request":{"command":"notify","id":"battery-level"}}"#)
        let answer = try await message(from: socket, within: .seconds(5)) { $0["seq"] as? Int == 7 }
        #expect((answer?["response"] as? [String: Any])?["ok"] as? Bool == true, "\(answer ?? [:])")
        let after = try await blocking { try client.send(["command": "counters"]) }
        func queued(_ line: String) -> Int {
            (object(line)["counters"] as? [String: Any])?["notificationsQueued"] as? Int ?? -1
        }
        #expect(queued(after) == queued(before) + 1, "\(before) → \(after)")
        try socket.sendText(#"{"type":"command","seq":8,"request":{"command":"get","id":"nope"}}"#)
        let refused = try await message(from: socket, within: .seconds(5)) { $0["seq"] as? Int == 8 }
        let error = (refused?["response"] as? [String: Any])?["error"] as? String ?? ""
        #expect((refused?["response"] as? [String: Any])?["ok"] as? Bool == false && error.contains("nope"), "\(error)")

        // The page goes away and another opens (a reload), once after the view stopped watching (no page for 0.6 s)
        // and once at once, while it still watches: each starts from the state and follows the events as the first
        // did, and none is told the device was unreachable, since it never was.
        var open = socket
        for (pause, seq) in [(Duration.milliseconds(600), 9), (.zero, 10)] {
            open.close()
            try await Task.sleep(for: pause)
            let reloaded = try PlainHTTP(port: port)
            let again = try await blocking {
                try reloaded.get(
                    "/ws", headers: PlainHTTP.upgrade(host: host, origin: "http://\(host)", cookie: cookie))
            }
            try #require(again.status == 101, "\(again)")
            let first = try await message(from: reloaded, within: .seconds(5)) { $0["type"] as? String != "update" }
            #expect(first?["type"] as? String == "snapshot", "after \(pause): \(first ?? [:])")
            try reloaded.sendText(
                #"{"type":"command","seq":\#(seq),"request":{"command":"notify","id":"battery-level"}}"#)
            let event = try await message(from: reloaded, within: .seconds(4)) { message in
                let event = message["event"] as? [String: Any]
                return event?["type"] as? String == "notification"
                    && event?["characteristic"] as? String == "battery-level"
            }
            #expect(event != nil, "the page reloaded after \(pause) got no notification event")
            open = reloaded
        }

        // The device stops: the page is told it cannot be reached.
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        let gone = try await message(from: open, within: .seconds(5)) { $0["type"] as? String == "device" }
        #expect(gone?["reachable"] as? Bool == false, "\(gone ?? [:])")
        ui.signal(SIGTERM)
        #expect(await ui.exitStatus() == 0, "\(ui.stderr)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Whether Debian's headless Chromium, its driver and Selenium are here (scripts/setup --lab installs them).
    static let hasBrowser =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
        && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/selenium")

    /// A real browser (headless Chromium driven by Selenium) on the page of a real `blemu run`: the tree shows the
    /// device's values, a `ctl set` shows within a second, the page's set and notify reach the device, a wrong
    /// token and a foreign page are refused (Tests/LiveViewBrowser/check_live_view.py). Its screenshot is kept in
    /// .build/test-results/live-view.png.
    @Test(.enabled(if: hasBrowser, "needs chromium, chromium-driver and python3-selenium (scripts/setup --lab)"))
    func aRealBrowserWatchesAndSteersTheDevice() async throws {
        let (bus, fake, directory) = try await rig()
        let (run, control, events) = try await steerableHeartRate(on: bus, in: directory)
        defer { withExtendedLifetime(fake) {} }
        let (ui, port, url) = try await view(control, ["--events", events, "--ui-token", "t0k3n"], in: directory)
        let results = ChildProcess.repositoryRoot + "/.build/test-results"
        try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/browser", withIntermediateDirectories: true)
        let check = try ChildProcess(
            "/usr/bin/python3",
            [
                ChildProcess.repositoryRoot + "/Tests/LiveViewBrowser/check_live_view.py", "--url", url,
                "--wrong-token-url", "http://127.0.0.1:\(port)/?token=wrong",
                "--ctl", "\(ChildProcess.blemu) ctl \(control)", "--screenshot", results + "/live-view.png",
            ], outputIn: directory + "/browser")
        let status = await check.exitStatus()
        print(check.stdout)
        #expect(status == 0, "\(check.stdout)\n\(check.stderr)")
        #expect(check.stdout.contains("live view: all checks passed"), "\(check.stdout)")
        #expect(FileManager.default.fileExists(atPath: results + "/live-view.png"))
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0)
        ui.signal(SIGTERM)
        #expect(await ui.exitStatus() == 0, "\(ui.stderr)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `blemu run --ui`: the view comes up with the device on a control socket of its own, says where, and goes with
    /// it.
    @Test func runWithUIServesTheViewBesideTheDeviceAndStopsItWithTheDevice() async throws {
        let (bus, fake, directory) = try await rig()
        defer { withExtendedLifetime(fake) {} }
        let run = try await heartRate(on: bus, ["--ui", "127.0.0.1:0"], in: directory)
        let (line, port, view) = try await viewBeside(run)
        let control = String(try #require(line.split(separator: "(device: ").last?.split(separator: ")").first))
        #expect(control.hasSuffix("/blemu-\(run.pid).sock"), "\(line)")
        let page = try await blocking { try PlainHTTP(port: port).get("/", headers: ["Host": "127.0.0.1:\(port)"]) }
        #expect(page.status == 200, "\(page)")
        let status = try await blocking { try ControlClient(path: control).send(["command": "status"]) }
        #expect(ControlClient.isOK(status), "\(status)")
        // The view holds nothing of the device's: no socket (D-Bus, the control listener, a client's connection)
        // of blemu's is open in its child too.
        func sockets(of pid: Int32) -> Set<String> {
            let directory = "/proc/\(pid)/fd"
            let links = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return Set(
                links.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0) }
                    .filter { $0.hasPrefix("socket:") })
        }
        #expect(!sockets(of: run.pid).isEmpty)
        let shared = sockets(of: view).intersection(sockets(of: run.pid))
        #expect(shared.isEmpty, "the view holds blemu's sockets: \(shared)")
        run.signal(SIGTERM)
        #expect(await run.exitStatus() == 0, "\(run.stderr)")
        #expect(throws: PlainHTTP.Failure.self, "the view stopped with the device") {
            try PlainHTTP(port: port).get("/", headers: [:])
        }
        #expect(!FileManager.default.fileExists(atPath: control), "the control socket is removed")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A `blemu run --ui` killed with SIGKILL cannot stop its view: the view sees its parent gone and ends by itself.
    @Test func aViewWhoseDeviceWasKilledEndsOnItsOwn() async throws {
        let (bus, fake, directory) = try await rig()
        defer { withExtendedLifetime(fake) {} }
        let run = try await heartRate(on: bus, ["--ui", "127.0.0.1:0"], in: directory)
        let (_, port, view) = try await viewBeside(run)
        /// The state letter of `pid` in /proc (nil once it is gone): "Z" for an orphan ended and not yet reaped.
        func state(_ pid: Int32) -> Substring? {
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            return stat.split(separator: ")").last?.split(separator: " ").first
        }
        // The view is an orphan once its parent dies, so it cannot be waited for; a pidfd (pidfd_open(2), which
        // glibc 2.36 has and Glibc's overlay does not) becomes readable when it ends: an event, not a poll.
        let pidfdOpen = try #require(
            dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open").map {
                unsafeBitCast($0, to: (@convention(c) (pid_t, UInt32) -> Int32).self)
            })
        let exit = pidfdOpen(view, 0)
        try #require(exit >= 0, "pidfd_open: \(errno)")
        defer { close(exit) }
        run.signal(SIGKILL)
        _ = await run.exitStatus()
        let ended = try await blocking { () -> Int32 in
            var watched = pollfd(fd: exit, events: Int16(POLLIN), revents: 0)
            return poll(&watched, 1, 10_000)
        }
        #expect(ended == 1 && (state(view) == nil || state(view) == "Z"), "the view \(view) outlived its device")
        #expect(throws: PlainHTTP.Failure.self, "the view stopped listening") {
            try PlainHTTP(port: port).get("/", headers: [:])
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A device that claimed its socket but is not serving yet holds a client in the socket's backlog: the view still
    /// listens and prints its URL, saying the device does not answer yet.
    @Test func aDeviceThatDoesNotAnswerYetDoesNotHoldTheViewBack() async throws {
        let directory = "/tmp/blemu-ui-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let silent = directory + "/silent.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        try #require(SocketCalls.bindAndListen(listener, to: try #require(SocketCalls.unixAddress(silent))))
        let (ui, _, _) = try await view(silent, in: directory)
        #expect(ui.stderr.contains("does not answer yet"), "\(ui.stderr)")
        ui.signal(SIGTERM)
        #expect(await ui.exitStatus() == 0, "\(ui.stderr)")
    }

    /// Beyond loopback a token is required: without `--ui-token` the view makes one and prints it in its URL.
    @Test func aViewBeyondLoopbackMakesATokenAndRefusesRequestsWithoutIt() async throws {
        let directory = "/tmp/blemu-ui-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (ui, port, url) = try await view(directory + "/absent.sock", listen: "0.0.0.0:0", in: directory)
        let token = try #require(url.split(separator: "=").last.map(String.init))
        #expect(token.count == 32 && token.allSatisfy(\.isHexDigit), "\(url)")
        #expect(ui.stderr.contains("does not answer yet"), "\(ui.stderr)")
        let host = "0.0.0.0:\(port)"
        let without = try await blocking { try PlainHTTP(port: port).get("/", headers: ["Host": host]) }
        #expect(without.status == 403, "\(without)")
        let with = try await blocking { try PlainHTTP(port: port).get("/?token=\(token)", headers: ["Host": host]) }
        #expect(with.status == 200, "\(with)")
        ui.signal(SIGINT)
        #expect(await ui.exitStatus() == 0, "\(ui.stderr)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A bad address is a usage error (64); an address taken by another listener cannot be listened on (71).
    @Test func aBadOrTakenAddressIsRefusedWithItsExitCode() async throws {
        let directory = "/tmp/blemu-ui-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bad = try ChildProcess(
            ChildProcess.blemu, ["ui", "--control", "/x.sock", "--listen", "example.com:80"], outputIn: directory)
        #expect(await bad.exitStatus() == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("the host must be an IP address"), "\(bad.stderr)")
        let (first, port, _) = try await view(directory + "/x.sock", in: directory)
        try FileManager.default.createDirectory(atPath: directory + "/taken", withIntermediateDirectories: true)
        let taken = try ChildProcess(
            ChildProcess.blemu, ["ui", "--control", "/x.sock", "--listen", "127.0.0.1:\(port)"],
            outputIn: directory + "/taken")
        #expect(await taken.exitStatus() == 71, "\(taken.stderr)")
        #expect(taken.stderr.contains("cannot listen on 127.0.0.1:\(port): Address already in use"), "\(taken.stderr)")
        first.signal(SIGTERM)
        #expect(await first.exitStatus() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Out of descriptors (every idle connection holds one, and the view ends its server on the accept that
    /// fails): the view says so in one line and exits 71, not ArgumentParser's bare 1.
    @Test func connectionsPastTheDescriptorLimitEndTheViewWithItsListeningCode() async throws {
        let directory = "/tmp/blemu-ui-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A hard limit of 48, so the view cannot raise its soft one past it.
        let (ui, port, _) = try await view(
            directory + "/x.sock", in: directory, wrapper: ["/usr/bin/prlimit", "--nofile=48:48"])
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        for _ in 0..<64 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard SocketCalls.connect(fd, to: address) else {
                close(fd)
                break
            }
            idle.append(fd)
        }
        #expect(await ui.exitStatus() == 71, "\(ui.stderr)")
        #expect(
            ui.stderr.contains("stopped accepting connections on 127.0.0.1:0: Too many open files"), "\(ui.stderr)")
    }
}
