import ArgumentParser
import DBus
import Serving

/// `blemu run PROFILE`: publishes a profile through bluetoothd and serves it until SIGINT or SIGTERM. This command
/// parses and checks the options; `blemu`, which it replaces itself with, serves them (`DeviceRun`).
struct RunCommand: ParsableCommand {
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
            central subscribes again. --ui [ADDRESS] serves a live view of the device for a browser \
            (`blemu ui`, docs/live-view.md) and prints its address; it stops with the device.

            Example:
              blemu run profiles/heart-rate.yaml --adapter hci0
              blemu run profiles/thermostat.yaml --control /tmp/thermostat.sock --events -
              blemu run profiles/heart-rate.yaml --bus session --log-level trace
              blemu run profiles/heart-rate.yaml --ui
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

    @Option(
        help:
            "Seconds a request may wait for its answer before the engine answers an error (under 5: bluetoothd answers itself after 5)."
    )
    var requestDeadline = 4.5

    @Option(help: "A Unix socket path for `blemu ctl` (JSON lines).")
    var control: String?

    @Option(
        help: ArgumentHelp(
            "Start COMMAND (sh -c) once the device serves, to answer requests over the control socket; restarted when it exits.",
            discussion: "It finds the socket in BLEMU_CONTROL (one of the device's own without --control).",
            valueName: "COMMAND"))
    var handler: String?

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

    @Option(
        name: .customLong("ui"),
        help: ArgumentHelp(
            "Serve a live view of the device (blemu ui) on ADDRESS, \(RunOptions.defaultUIAddress) when --ui is given "
                + "alone; with no --control, the device gets a control socket of its own for it.",
            valueName: "address"))
    var ui: String?

    /// `arguments` with the default address after a `--ui` that has none, in `run` and `lab run` (before the `--` of
    /// its command), since ArgumentParser has no option whose value may be left out: `blemu run FILE -v --ui` reaches
    /// blemu-cli (for its `-v`) spelled so, and so does every `blemu lab run --ui -- COMMAND`.
    static func withUIAddress(_ arguments: [String]) -> [String] {
        guard arguments.first == "run" || arguments.prefix(2) == ["lab", "run"] else { return arguments }
        var spelled: [String] = []
        var isCommand = false
        for (index, word) in arguments.enumerated() {
            spelled.append(word)
            if word == "--" { isCommand = true }
            let next = arguments.indices.contains(index + 1) ? arguments[index + 1] : nil
            if !isCommand && word == "--ui" && next.map({ $0.hasPrefix("-") }) ?? true {
                spelled.append(RunOptions.defaultUIAddress)
            }
        }
        return spelled
    }

    /// The options as `blemu` serves them.
    var options: RunOptions {
        var options = RunOptions(file: file)
        options.nameSuffix = nameSuffix
        options.adapter = adapter
        options.bus = bus
        options.logLevel = logLevel.level
        options.verbose = verbose
        options.requestDeadline = requestDeadline
        options.control = control
        options.handler = handler
        options.events = events
        options.restoreID = restoreId
        options.stateDirectory = stateDir
        options.acquireWrite = acquireWrite
        options.acquireNotify = acquireNotify
        options.ui = ui
        return options
    }

    func validate() throws {
        if let problem = options.problem { throw ValidationError(problem) }
    }

    /// Hands the checked options back to `blemu` (beside this executable, or /usr/bin/blemu from the package), which
    /// serves them without ArgumentParser or Foundation in the process (`Handover`).
    func run() throws {
        guard let blemu = Handover.locate(Handover.serving) else {
            Console.error("blemu: blemu is not installed beside blemu-cli (nor in ../../bin); reinstall blemu")
            throw ExitCode.software
        }
        let reason = Handover.exec(blemu, ["run"] + options.arguments, marked: true)
        Console.error("blemu: cannot run \(blemu): \(reason)")
        throw ExitCode.software
    }
}
