import ArgumentParser
import BlueZ
import DBus
import Dispatch
import Emulation
import Foundation
import GATTModel
import Logging
import Peripheral

/// `blemu run PROFILE`: publishes a profile through bluetoothd and serves it until SIGINT or SIGTERM.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a profile as a Bluetooth LE peripheral on a BlueZ adapter.",
        discussion: """
            Prints the advertising plan, registers the GATT application, the advertisement and a pairing agent \
            with bluetoothd; with -v, logs every request and its answer on one line each (stderr; the event log \
            records every request whatever the level). Prints a line \
            containing "advertising" once everything is registered. SIGINT, SIGTERM, SIGHUP or SIGQUIT \
            unregisters everything, restores the adapter's alias and exits 0; SIGPIPE is ignored (a reader of \
            --events - that goes away costs event lines, counted and said on stderr, never the device). Exits 65 for a \
            bad profile, 69 when bluetoothd or the adapter is unavailable or refuses a registration, and 70 when \
            blemu cannot export its own objects.

            The profile's behaviour runs too: scheduled values, write rules and faults. --control PATH opens a \
            Unix socket for `blemu ctl`; --events FILE|- writes every event as one JSON line; --restore-id NAME \
            keeps written values across restarts in NAME.json under --state-dir (default \
            $XDG_STATE_HOME/blemu, else ~/.local/state/blemu), written atomically on every change; saved \
            subscriptions are reported, not re-established: bluetoothd forgets them when blemu exits, and each \
            central subscribes again.

            Example:
              blemu run profiles/heart-rate.yaml --adapter hci0
              blemu run profiles/thermostat.yaml --control /tmp/thermostat.sock --events -
              blemu run profiles/heart-rate.yaml --bus session --log-level trace
            """)

    @Argument(help: "A profile file (YAML).")
    var file: String

    @Option(help: "Text added to the profile's name and local name (the lab names the copies of a fleet so).")
    var nameSuffix: String?

    @Option(help: "The adapter to use.")
    var adapter = "hci0"

    @Option(help: "The bus bluetoothd is on: system, session, or a D-Bus address such as unix:path=/tmp/bus.")
    var bus = BusAddress.system

    @Option(help: "How much to log on stderr; debug logs every request, trace every D-Bus message.")
    var logLevel = LogLevel(.info)

    @Flag(name: .shortAndLong, help: "Log every request and its answer on one line each (at least --log-level debug).")
    var verbose = false

    @Option(help: "Seconds a request may wait for its answer before the engine answers an error (under 30).")
    var requestDeadline = 10.0

    @Option(help: "A Unix socket path for `blemu ctl` (JSON lines).")
    var control: String?

    @Option(help: "Write every event as a JSON line to FILE, or to stdout with -.")
    var events: String?

    @Option(help: "Keep written values under this name, restored on the next run (subscriptions are only reported).")
    var restoreId: String?

    @Option(help: "Where --restore-id keeps its state file (default $XDG_STATE_HOME/blemu, else ~/.local/state/blemu).")
    var stateDir: String?

    @Flag(
        help: """
            Stream write-without-response characteristics through AcquireWrite sockets: faster, but writes from \
            different centrals can no longer be told apart, and BlueZ corrupts writes that arrive before its \
            socket exists (docs/bluez.md).
            """)
    var acquireWrite = false

    @Flag(
        name: .customLong("acquire-notify"), inversion: .prefixedNo,
        help: """
            Send notifications through AcquireNotify sockets (the default). --no-acquire-notify sends each update \
            once as PropertiesChanged, which reaches every subscriber: for BlueZ 5.69-5.75, whose per-device \
            sockets each reach every subscriber (docs/bluez.md).
            """)
    var acquireNotify = true

    func validate() throws {
        guard requestDeadline > 0, requestDeadline < 30 else {
            throw ValidationError("--request-deadline must be between 0 and 30 seconds (ATT times out at 30)")
        }
    }

    func run() async throws {
        // A reader of stdout (`--events - | head`) that goes away must not kill the device with its services and
        // advertisement registered: with SIGPIPE ignored, the write fails with EPIPE, which the event log counts.
        signal(SIGPIPE, SIG_IGN)
        var profile = try ProfileInput.load(file)
        if let nameSuffix {
            profile.name += nameSuffix
            profile.advertisement.localName = profile.advertisement.localName.map { $0 + nameSuffix }
        }
        let plan = try ProfileInput.plan(profile, file: file)
        say(plan.report)
        var logger = Logger(label: "blemu") { StreamLogHandler.standardError(label: $0) }
        // One formatted line per request costs more CPU than answering it: only when asked for (issue 14).
        logger.logLevel = verbose ? min(logLevel.level, .debug) : logLevel.level
        let stops = StopSignals()
        defer { stops.cancel() }

        let device = try await start(profile, logger: logger)
        let name = plan.localName ?? profile.name
        say("advertising \"\(name)\" on \(adapter): \(profile.services.count) services published; Ctrl-C to stop")
        for await number in stops.numbers {
            logger.info("signal \(number): unregistering")
            break
        }
        await device.stop()
        let counts = device.manager.requestCounts
        say("stopped: \(counts.requests) requests, \(counts.answered) answered")
        if let eventLog = device.eventLog, eventLog.lostLines > 0 {
            let reason = eventLog.writeFailure.map { "; writing failed: \($0)" } ?? ""
            Console.error("blemu: event log: \(eventLog.lostLines) lines lost\(reason)")
        }
    }

    /// Builds the behaviour, connects to bluetoothd, publishes, advertises and opens the control socket; on a failure
    /// says why, unregisters what was registered and throws the exit code.
    private func start(_ profile: PeripheralProfile, logger: Logger) async throws -> RunningDevice {
        // The behaviour (schedules, rules, replay files) is built before bluetoothd is touched: a bad profile is 65
        // whatever the bus, and nothing is registered to undo.
        let stateStore = restoreId.map {
            StateStore(restoreID: $0, directory: stateDir, profile: profile, logger: logger)
        }
        let restored = stateStore?.restore()
        if let restored, let restoreId {
            let history = "\(restored.subscriptions.count) subscriptions, as history"
            logger.notice("restoring \(restored.values.count) values saved as \(restoreId) (and \(history))")
        }
        let configuration = PeripheralManager.Configuration(
            requestDeadline: .milliseconds(Int(requestDeadline * 1000)))
        let eventLog: EventLog?
        let emulator: Emulator
        do { eventLog = try events.map { try EventLog(path: $0) } } catch {
            Console.error("blemu: \(error)")
            throw ExitCode.badProfile
        }
        do {
            emulator = try Emulator(
                profile: profile, server: ProfileServer(store: ValueStore(restored?.values ?? [:]), logger: logger),
                requestDeadline: configuration.requestDeadline,
                baseDirectory: URL(fileURLWithPath: file).deletingLastPathComponent().path, eventLog: eventLog,
                stateStore: stateStore, logger: logger)
        } catch {
            Console.error("\(file): error: \(error)")
            throw ExitCode.badProfile
        }
        let backend: BlueZBackend
        do {
            backend = try await BlueZBackend(
                bus: bus, adapter: adapter,
                options: BlueZOptions(
                    pairing: profile.pairing, deviceName: profile.name, useAcquireNotify: acquireNotify,
                    useAcquireWrite: acquireWrite),
                logger: logger)
        } catch {
            Console.error(
                "blemu: \(error). Check that bluetoothd runs (systemctl status bluetooth) and that \(adapter) exists (bluetoothctl list)."
            )
            throw ExitCode.unavailable
        }
        var device = RunningDevice(
            manager: PeripheralManager(
                backend: backend, handler: emulator.handler, configuration: configuration, restoring: restored,
                logger: logger),
            emulator: emulator, backend: backend, eventLog: eventLog, control: nil)
        do {
            if await device.manager.state != .poweredOn { logger.info("waiting for \(adapter) to be powered on") }
            try await device.manager.waitUntilPoweredOn()
            for service in profile.services { try await device.manager.publish(service) }
            try await device.manager.startAdvertising(profile.advertisement)
            await emulator.start(on: device.manager)
        } catch {
            Console.error("blemu: \(error)")
            await device.stop()
            throw Self.exitCode(for: error)
        }
        if let control {
            let server = ControlServer(path: control, emulator: emulator, logger: logger)
            do { try server.start() } catch {
                Console.error("blemu: control socket \(control): \(error)")
                await device.stop()
                throw ExitCode.unavailable
            }
            device.control = server
        }
        // bluetoothd adds a Device Information service of its own unless main.conf says `DeviceID = false`
        // (src/gatt-database.c populate_devinfo_service): a central would see two 0x180A.
        if profile.services.contains(where: { $0.uuid == BluetoothUUID(0x180A) }) {
            logger.notice(
                "the profile declares Device Information (180A): unless bluetoothd's main.conf has [General] DeviceID = false, centrals also see bluetoothd's own 180A (PnP ID)"
            )
        }
        return device
    }

    /// Writes a line to stdout at once (unbuffered), so a script waiting for "advertising" sees it.
    /// With `--events -` stdout carries the JSON lines, so the human lines go to stderr. A write that fails (a
    /// reader that went away) is ignored: the device keeps running.
    private func say(_ line: String) {
        let descriptor = events == "-" ? STDERR_FILENO : STDOUT_FILENO
        _ = Array((line + "\n").utf8).withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

extension RunCommand {
    /// The sysexits code for a failure to publish or advertise, from the stack's typed error: an advertisement that
    /// cannot be laid out is the profile's fault (65), an object tree we could not export is ours (70), and anything
    /// bluetoothd refused or could not be asked is the service's (69).
    static func exitCode(for error: any Error) -> ExitCode {
        guard case PeripheralError.backendFailed(let failure) = error, let bluez = failure.error as? BlueZError else {
            return .unavailable
        }
        switch bluez {
        case .invalidAdvertisement: return .badProfile
        case .export: return .software
        case .unavailable, .rejected, .extendedAdvertisingUnavailable, .shutDown: return .unavailable
        }
    }
}

/// What `blemu run` started, stopped in one way whether it ends on a signal or on a failure half-way.
private struct RunningDevice {
    let manager: PeripheralManager
    let emulator: Emulator
    let backend: BlueZBackend
    let eventLog: EventLog?
    var control: ControlServer?

    /// Closes the control socket, answers the requests a delay fault holds, stops the behaviour, unregisters from
    /// bluetoothd and closes the event log.
    func stop() async {
        control?.stop()
        // Requests a delay fault holds are answered now, while the application is still registered: left held,
        // bluetoothd would answer them itself after its timeout and `requests == answered` would not hold.
        emulator.releaseHeldRequests()
        let answeredBy = ContinuousClock.now + .seconds(2)
        while manager.requestCounts.requests != manager.requestCounts.answered, ContinuousClock.now < answeredBy {
            try? await Task.sleep(for: .milliseconds(5))
        }
        await emulator.stop()
        await backend.shutdown()
        eventLog?.close()
    }
}

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT as an async stream of their numbers, with the default handlers ignored so
/// the process can unregister first. SIGHUP (a closed terminal) and SIGQUIT (Ctrl-\\) end the run the same way:
/// left to their defaults they would exit (or dump core) with the application, the advertisement and the alias
/// still registered.
private struct StopSignals {
    let numbers: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init() {
        let (numbers, stop) = AsyncStream<Int32>.makeStream()
        let queue = DispatchQueue(label: "blemu.signals")
        self.numbers = numbers
        sources = [SIGINT, SIGTERM, SIGHUP, SIGQUIT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { stop.yield(number) }
            source.resume()
            return source
        }
    }

    /// Stops listening.
    func cancel() { for source in sources { source.cancel() } }
}
