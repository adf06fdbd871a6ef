// The bus a bus-level test runs on (a `dbus-daemon` of its own, for a FakeBluetoothd and the app under test), and
// two helpers that await a stream's elements within a time limit, so a missing one fails a test instead of hanging it.
import DBus
import Foundation
import LocalIO
import Logging
import Synchronization

/// A `dbus-daemon` of our own in a temporary directory, isolated from the system and session buses: the bus a test
/// runs a `FakeBluetoothd` and the app under test on (one per test); killed by `stop()` (or deinit). Spawned with
/// `ProcessSpawn`, not Foundation's Process, whose waitUntilExit can hang when called from Swift concurrency's
/// threads on Linux: the stop signals at their defaults and none blocked (the test's threads block them, and a child
/// inherits that), none of the test process's descriptors, which would hold another test's pipe open for as long as
/// the daemon lives (a test reading its child's output to the end then waited for ever), and in the test run's
/// process group, so that a Ctrl-C of the run ends the daemons with it.
public final class PrivateBus: Sendable {
    /// Where Debian installs the daemon (package `dbus`).
    public static let daemonPath = "/usr/bin/dbus-daemon"
    /// Whether the daemon is installed; bus-level suites are enabled on it.
    public static var isAvailable: Bool { access(daemonPath, X_OK) == 0 }

    /// The bus address, `unix:path=...`, for `BusConnection(.address(...))`.
    public let address: String
    /// The daemon's process id.
    public let pid: pid_t
    private let directory: String
    private let isStopped = Mutex(false)

    /// Starts a daemon and waits for its address; throws when it cannot be spawned or prints no address.
    public init() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("blemu-dbus-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = directory + "/bus.conf"
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw DBusError(name: "test.NoPipe", message: "pipe failed") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let spawned = ProcessSpawn.start(
            [Self.daemonPath, "--config-file=\(configPath)", "--nofork", "--print-address=1"],
            standardOutput: .descriptor(ends[1]), standardError: .discarded, ownGroup: false)
        close(ends[1])
        defer { close(ends[0]) }
        let child: pid_t
        switch spawned {
        case .success(let spawnedPid): child = spawnedPid
        case .failure(let error): throw DBusError(name: "test.NoDaemon", message: "cannot start dbus-daemon: \(error)")
        }
        pid = child
        // The daemon prints its address once it listens: waiting for that line is waiting for readiness.
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(ends[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        address = String(decoding: bytes, as: UTF8.self)
        guard !address.isEmpty else {
            kill(child, SIGTERM)
            var ignored: Int32 = 0
            waitpid(child, &ignored, 0)
            throw DBusError(name: "test.NoDaemon", message: "dbus-daemon printed no address")
        }
    }

    deinit { stop() }

    /// Kills the daemon and removes its directory; safe to call twice.
    public func stop() {
        guard
            !isStopped.withLock({
                let was = $0; $0 = true; return was
            })
        else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A new connection to this bus; with DBUS_TRACE set, the whole conversation is logged.
    public func connect(
        _ label: String = "test", trace: Bool = ProcessInfo.processInfo.environment["DBUS_TRACE"] != nil
    ) throws -> BusConnection {
        var logger = Logger(label: label)
        logger.logLevel = trace ? .trace : .critical
        return try BusConnection(.address(address), logger: logger)
    }
}

/// The first element of `stream`, or nil if none arrives within `limit` (a failing test must not hang).
public func first<Element: Sendable>(
    of stream: AsyncStream<Element>, within limit: Duration = .seconds(10)
) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

/// Collects `count` elements of `stream`, or fewer if the time runs out.
public func collect<Element: Sendable>(
    _ count: Int, of stream: AsyncStream<Element>, within limit: Duration = .seconds(10)
) async -> [Element] {
    await withTaskGroup(of: [Element]?.self) { group in
        group.addTask {
            var result: [Element] = []
            for await element in stream {
                result.append(element)
                if result.count == count { break }
            }
            return result
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result ?? []
    }
}
