import Foundation
import Testing

@testable import Lab

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `blemu lab run --ui` as a user runs it: the heart-rate profile in the VM, its live view forwarded to the host, and
/// a real headless Chromium on the host watching and steering it (Tests/LiveViewBrowser/check_live_view.py, its
/// `blemu ctl` going through the view, since the control socket is inside the VM). The VM's command waits for the
/// browser to finish, then reads the value the page set with `blemu ctl` inside the VM. One boot, on the first
/// bounding system's btvirt.
@Suite(
    .needsLab, .needsBlemuRun,
    .enabled(if: HeadlessBrowser.isInstalled, "needs chromium, chromium-driver and python3-selenium"),
    .labSuiteTimeLimit)
struct LiveViewScenarioTests {
    private static let browserDirectory = LabScenario.package + "/Tests/LiveViewBrowser"

    /// A port free on the host's loopback now (the kernel's pick for port 0), for qemu to forward.
    private static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(bound, "no free port: \(String(cString: strerror(errno)))")
        return UInt16(bigEndian: address.sin_port)
    }

    /// Whether the view at `url` answers with its page, polled each second for `seconds`. Each try is bounded too:
    /// qemu accepts a forwarded connection before the guest's port listens.
    private static func answers(_ url: String, within seconds: Int) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var request = URLRequest(url: URL(string: url)!)
        request.timeoutInterval = 5
        while ContinuousClock.now < deadline {
            if let (_, response) = try? await URLSession.shared.data(for: request),
                (response as? HTTPURLResponse)?.statusCode == 200
            {
                return true
            }
            try? await Task.sleep(for: .seconds(1))
        }
        return false
    }

    @Test func aBrowserOnTheHostWatchesAndSteersAPeripheralInTheVM() async throws {
        let system = try #require(LabScenario.boundingSystems.first, "no lab system")
        let results = try LabScenario.freshResultsDirectory()
        var configuration = LabConfiguration(
            resultsDirectory: results, controllers: 2, profiles: [LabScenario.package + "/profiles/heart-rate.yaml"],
            timeout: .seconds(420), stepTimeout: .seconds(60), blemuExecutable: LabScenario.blemuExecutable,
            workingDirectory: LabScenario.package, bluez: system.bluez, kernel: system.kernel)
        let view = LabLiveView(host: "127.0.0.1", port: try Self.freePort(), token: "lab0view0token")
        configuration.liveView = view
        let done = results + "/browser-done"
        let command = [
            "/bin/sh", "-c",
            "until [ -e \(done) ]; do sleep 0.5; done; "
                + "\"${BLEMU_LAB_BLEMU:-blemu}\" ctl \"$BLEMU_LAB_CONTROL\" get battery-level > \"$BLEMU_LAB_RESULTS/after-browser.json\"",
        ]
        let url = view.url(peripheral: 0)
        // The VM may wait at the gate for many minutes behind the other suites' boots: the view's deadline starts
        // when this boot is admitted, not when the test starts.
        let (admitted, admission) = AsyncStream.makeStream(of: Void.self)
        let boot = Task { [configuration] in
            try await LabBootGate.shared.admitted(.short) {
                admission.yield()
                admission.finish()
                return try await LabScenario.boot(configuration, running: command)
            }
        }
        for await _ in admitted { break }
        // The page is there once the peripheral serves: boot, bluetoothd, power, then `blemu run` and `blemu ui`.
        let reachable = await Self.answers(url, within: 400)
        var check = ChildProcess.Outcome(status: -1, output: "the view never answered at \(url)")
        if reachable {
            check = try await ChildProcess.finish(
                [
                    "/usr/bin/python3", Self.browserDirectory + "/check_live_view.py", "--url", url,
                    "--wrong-token-url", "http://127.0.0.1:\(view.port)/?token=wrong",
                    "--ctl", "/usr/bin/python3 \(Self.browserDirectory)/ctl_via_view.py \(url)",
                    "--screenshot", results + "/live-view.png", "--expect-bluez", system.bluez.version,
                ], keepingStderr: true)
        }
        #expect(FileManager.default.createFile(atPath: done, contents: Data()), "cannot write \(done)")
        let run = try await boot.value
        print(check.output)
        #expect(check.status == 0 && check.output.contains("live view: all checks passed"), "\(check.output)")
        #expect(run.exitCode == 0, "\(run.resultsDirectory)")
        // The value the page set, read in the VM by the device's own control socket.
        let after = (try? String(contentsOfFile: results + "/after-browser.json", encoding: .utf8)) ?? ""
        #expect(after.contains("\"percent\":33"), "\(after)")
        let log = (try? String(contentsOfFile: results + "/ui-hci0.log", encoding: .utf8)) ?? ""
        #expect(log.contains("blemu ui: http://10.0.2.15:8080/?token=lab0view0token"), "\(log)")
    }
}

/// Debian's headless Chromium, its driver and Selenium (scripts/setup --lab installs them).
enum HeadlessBrowser {
    /// Whether all three are here.
    static let isInstalled =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
        && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/selenium")
}
