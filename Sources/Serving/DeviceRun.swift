import BlueZ
import BlueZModel
import DBus
import Emulation
import GATTModel
import GATTProfile
import LocalIO
import Logging
import Peripheral

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu run`'s work, in the `blemu` process: publishes a profile through bluetoothd and serves it until
/// SIGINT, SIGTERM, SIGHUP or SIGQUIT; every failure is said on stderr in one line and ends with its exit status.
public struct DeviceRun: Sendable {
    /// What to run and how.
    public let options: RunOptions

    /// A run of `options`. A live view and a handler need a control socket: with `--ui` or `--handler` and no
    /// `--control`, one of its own.
    public init(_ options: RunOptions) {
        var options = options
        if (options.ui != nil || options.handler != nil) && options.control == nil {
            options.control = RunOptions.ownControlPath()
        }
        self.options = options
    }

    /// Serves until a stop signal, then unregisters everything. Throws the exit status of a failure.
    public func run() async throws(ExitStatus) {
        // A reader of stdout (`--events - | head`) that goes away must not kill the device with its services and
        // advertisement registered: with SIGPIPE ignored, the write fails with EPIPE, which the event log counts.
        signal(SIGPIPE, SIG_IGN)
        var profile = try ProfileFile.load(options.file)
        if let nameSuffix = options.nameSuffix {
            profile.name += nameSuffix
            profile.advertisement.localName = profile.advertisement.localName.map { $0 + nameSuffix }
        }
        let plan = try ProfileFile.plan(profile, file: options.file)
        say(plan.report)
        var logger = Logger(label: "blemu") { StreamLogHandler.standardError(label: $0) }
        // One formatted line per request costs more CPU than answering it: only when asked for (Benchmarks/README.md).
        logger.logLevel = options.verbose ? min(options.logLevel, .debug) : options.logLevel
        let stops = StopSignals()
        defer { stops.cancel() }

        let device = try await start(profile, logger: logger)
        let name = plan.localName ?? profile.name
        say(
            "advertising \"\(name)\" on \(options.adapter): \(profile.services.count) services published; Ctrl-C to stop"
        )
        let view = options.ui.flatMap { listen in
            options.control.flatMap {
                LiveViewProcess.start(
                    control: $0, listen: listen, events: options.events, quietStdout: options.events == "-")
            }
        }
        let handler = options.handler.flatMap { command in
            options.control.flatMap { HandlerProcess.start(command: command, control: $0) }
        }
        for await number in stops.numbers {
            logger.info("signal \(number): unregistering")
            break
        }
        // The handler first: what it still holds gets its fallback, answered before the device unregisters.
        handler?.stop()
        view?.stop()
        await device.stop()
        let counts = device.manager.requestCounts
        say("stopped: \(counts.requests) requests, \(counts.answered) answered")
        if let eventLog = device.eventLog, eventLog.lostLines > 0 {
            let reason = eventLog.writeFailure.map { "; writing failed: \($0)" } ?? ""
            Console.error("blemu: event log: \(eventLog.lostLines) lines lost\(reason)")
        }
    }

    /// Builds the behaviour, connects to bluetoothd, publishes, advertises and opens the control socket; on a failure
    /// says why, unregisters what was registered and throws the exit status.
    private func start(_ profile: PeripheralProfile, logger: Logger) async throws(ExitStatus) -> RunningDevice {
        // The behaviour (schedules, rules, replay files) is built before bluetoothd is touched: a bad profile is 65
        // whatever the bus, and nothing is registered to undo.
        let stateStore = options.restoreID.map {
            StateStore(restoreID: $0, directory: options.stateDirectory, profile: profile, logger: logger)
        }
        let restored = stateStore?.restore()
        if let restored, let restoreID = options.restoreID {
            let history = "\(restored.subscriptions.count) subscriptions, as history"
            logger.notice("restoring \(restored.values.count) values saved as \(restoreID) (and \(history))")
        }
        let configuration = PeripheralManager.Configuration(
            requestDeadline: .milliseconds(Int(options.requestDeadline * 1000)))
        let eventLog: EventLog?
        let emulator: Emulator
        do { eventLog = try options.events.map { path throws(EventLog.OpenError) in try EventLog(path: path) } } catch {
            Console.error("blemu: \(error)")
            throw .badProfile
        }
        // The control socket's `events` reads the log's feed: with `--control` alone, a log that writes no file.
        let feedLog = eventLog ?? (options.control != nil ? EventLog() : nil)
        do {
            emulator = try Emulator(
                profile: profile, server: ProfileServer(store: ValueStore(restored?.values ?? [:]), logger: logger),
                requestDeadline: configuration.requestDeadline,
                baseDirectory: LocalFile.split(options.file).directory, eventLog: feedLog,
                stateStore: stateStore, logger: logger)
        } catch {
            Console.error("\(options.file): error: \(error)")
            throw .badProfile
        }
        // The control path is claimed before bluetoothd is touched: a second copy given a live instance's path
        // stops here, before it registers an application or an advertisement a central would see.
        let control = options.control.map { ControlServer(path: $0, emulator: emulator, logger: logger) }
        do { try control?.claim() } catch {
            Console.error("blemu: control socket \(error)")
            throw .unavailable
        }
        let adapter = options.adapter
        let backend: BlueZBackend
        do {
            backend = try await BlueZBackend(
                bus: options.bus, adapter: adapter,
                options: BlueZOptions(
                    pairing: profile.pairing, deviceName: profile.name, useAcquireNotify: options.acquireNotify,
                    useAcquireWrite: options.acquireWrite),
                logger: logger)
        } catch {
            control?.stop()
            Console.error(
                "blemu: \(error). Check that bluetoothd runs (systemctl status bluetooth) and that \(adapter) exists (bluetoothctl list)."
            )
            throw .unavailable
        }
        // `status` asks bluetoothd's version the first time it is called, not here: serving starts no extra process.
        let bus = options.bus
        await emulator.serve(on: ServingHost(adapter: adapter) { await BluetoothdVersion.of(bus: bus) })
        let device = RunningDevice(
            manager: PeripheralManager(
                backend: backend, handler: emulator.handler, configuration: configuration, restoring: restored,
                logger: logger),
            emulator: emulator, backend: backend, eventLog: eventLog, control: control)
        do {
            if await device.manager.state != .poweredOn { logger.info("waiting for \(adapter) to be powered on") }
            try await device.manager.waitUntilPoweredOn()
            for service in profile.services { try await device.manager.publish(service) }
            try await device.manager.startAdvertising(profile.advertisement)
            await emulator.start(on: device.manager)
        } catch {
            Console.error("blemu: \(error)\(await diagnosis(of: error))")
            await device.stop()
            throw Self.exitStatus(for: error)
        }
        do { try control?.start() } catch {
            Console.error("blemu: control socket \(error)")
            await device.stop()
            throw .unavailable
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

    /// The cause and fix `blemu doctor` would give for a registration bluetoothd refused (a known bad kernel/BlueZ
    /// pair, every advertising instance taken), else where to look; empty for failures that are not bluetoothd's.
    private func diagnosis(of error: any Error) async -> String {
        guard case PeripheralError.backendFailed(let failure) = error,
            case .rejected(let operation, let refusal)? = failure.error as? BlueZError
        else { return "" }
        return RegistrationDiagnosis.explain(
            operation: operation, errorName: refusal.name, kernel: KernelRelease.current(),
            bluez: await BluetoothdVersion.of(bus: options.bus), adapter: options.adapter)
    }

    /// Writes a line to stdout at once, so a script waiting for "advertising" sees it. With `--events -` stdout
    /// carries the JSON lines, so the human lines go to stderr.
    private func say(_ line: String) {
        Console.line(line, to: options.events == "-" ? STDERR_FILENO : STDOUT_FILENO)
    }

    /// The exit status for a failure to publish or advertise, from the stack's typed error: an advertisement that
    /// cannot be laid out is the profile's fault (65), an object tree we could not export is ours (70), and anything
    /// bluetoothd refused or could not be asked is the service's (69).
    public static func exitStatus(for error: any Error) -> ExitStatus {
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
