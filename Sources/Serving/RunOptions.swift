import DBus
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `blemu run` was asked to do. `blemu` reads the common spelling itself (`init(arguments:)`); blemu-cli parses
/// every other one and documents the options (ArgumentParser: help, man page, completions), then hands them back as
/// `arguments` (`Handover`). The serving process so links neither ArgumentParser nor Foundation (each costs
/// MiB of memory in every running device, and milliseconds at every start).
public struct RunOptions: Hashable, Sendable {
    /// The profile file (YAML).
    public var file: String
    /// Text added to the profile's name and local name (the lab names the copies of a fleet so).
    public var nameSuffix: String?
    /// The adapter to use.
    public var adapter = "hci0"
    /// The bus bluetoothd is on.
    public var bus = BusAddress.system
    /// How much to log on stderr.
    public var logLevel = Logger.Level.info
    /// One log line per request and its answer (at least `debug`).
    public var verbose = false
    /// Seconds a request may wait for its answer before the engine answers an error.
    public var requestDeadline = 4.5
    /// The control socket's path, if any.
    public var control: String?
    /// Where every event goes as a JSON line: a file, or `-` for stdout.
    public var events: String?
    /// The name written values are kept under across runs.
    public var restoreID: String?
    /// Where `restoreID`'s state file lives.
    public var stateDirectory: String?
    /// Write-without-response through AcquireWrite sockets.
    public var acquireWrite = false
    /// Notifications through AcquireNotify sockets.
    public var acquireNotify = true
    /// Where the live view listens (`--ui [ADDR]`, blemu-cli's `ui` beside the device); nil: no view.
    public var ui: String?
    /// A command (run by `/bin/sh -c`) that answers requests over the control socket, started and supervised with
    /// the device (`HandlerProcess`); nil: none.
    public var handler: String?

    /// The address `--ui` listens on when given alone.
    public static let defaultUIAddress = "127.0.0.1:8080"

    /// Options with their defaults for `file`.
    public init(file: String) { self.file = file }

    /// Why the options cannot run, in the words `--help` uses; nil when they can.
    public var problem: String? {
        // bluetoothd answers an application's read or write itself after 5 s (src/shared/gatt-db.c
        // ATTRIBUTE_TIMEOUT, 5.66 to 5.87): a later answer never reaches the central, and a link that went down
        // meanwhile crashes bluetoothd (docs/bluez.md, "Requests answered late").
        guard requestDeadline > 0, requestDeadline < 5 else {
            return "--request-deadline must be above 0 and under 5 seconds: bluetoothd answers a request itself after 5"
        }
        return nil
    }

    /// The command line that carries these options, spelled as `blemu run` spells them: the file, then every option
    /// that is set (an adapter, a bus, a log level and a deadline always are).
    public var arguments: [String] {
        var arguments = [file]
        func add(_ name: String, _ value: String?) { if let value { arguments += ["--" + name, value] } }
        add("name-suffix", nameSuffix)
        add("adapter", adapter)
        add("bus", bus.name)
        add("log-level", logLevel.rawValue)
        if verbose { arguments.append("--verbose") }
        add("request-deadline", "\(requestDeadline)")
        add("control", control)
        add("events", events)
        add("restore-id", restoreID)
        add("state-dir", stateDirectory)
        if acquireWrite { arguments.append("--acquire-write") }
        if !acquireNotify { arguments.append("--no-acquire-notify") }
        add("ui", ui)
        add("handler", handler)
        return arguments
    }

    /// Reads what `arguments` writes: the file first, then each option once, spelled `--name value`. A line a person
    /// typed (`handedOver` false) must also have no file or value that looks like an option (`--events -` aside):
    /// that is a strict subset of what ArgumentParser reads the same way, so `blemu` can serve such a line itself and
    /// leave every other spelling to blemu-cli. A line blemu-cli handed over takes every value as it is (a name
    /// suffix `-2` it parsed from `--name-suffix=-2`). Throws a one-line message for anything else.
    public init(arguments: some Sequence<String>, handedOver: Bool = false) throws(UsageError) {
        var words = Array(arguments)[...]
        guard let file = words.popFirst(), handedOver || !file.hasPrefix("-") else {
            throw UsageError("expected a profile file")
        }
        self.init(file: file)
        var seen: Set<String> = []
        while let word = words.popFirst() {
            guard seen.insert(word).inserted else { throw UsageError("\(word) given twice") }
            func value() throws(UsageError) -> String {
                guard let value = words.popFirst(),
                    handedOver || !value.hasPrefix("-") || (word == "--events" && value == "-")
                else {
                    throw UsageError("\(word) needs a value")
                }
                return value
            }
            switch word {
            case "--name-suffix": nameSuffix = try value()
            case "--adapter": adapter = try value()
            case "--bus": bus = BusAddress(name: try value())
            case "--log-level":
                let name = try value()
                guard let level = Logger.Level(rawValue: name) else { throw UsageError("no log level \(name)") }
                logLevel = level
            case "--verbose": verbose = true
            case "--request-deadline":
                let text = try value()
                guard let seconds = Double(text) else { throw UsageError("--request-deadline \(text) is not seconds") }
                requestDeadline = seconds
            case "--control": control = try value()
            case "--events": events = try value()
            case "--restore-id": restoreID = try value()
            case "--state-dir": stateDirectory = try value()
            case "--acquire-write": acquireWrite = true
            case "--no-acquire-notify": acquireNotify = false
            case "--handler": handler = try value()
            // Its address is optional: after the file, a word that is not an option can only be the address.
            case "--ui":
                ui = words.first.map { !$0.hasPrefix("-") } == true ? words.popFirst() : Self.defaultUIAddress
            default: throw UsageError("unknown option \(word)")
            }
        }
        if let problem { throw UsageError(problem) }
    }

    /// A command line `init(arguments:)` cannot read.
    public struct UsageError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What was wrong, in one line.
        public var description: String

        init(_ description: String) { self.description = description }
    }
}

extension RunOptions {
    /// Where a run whose live view or handler needs a control socket puts one when `--control` gives none: the
    /// user's runtime directory (private to the user) when there is one, else /tmp; named after the process, so two
    /// runs never share one.
    static func ownControlPath() -> String {
        let directory =
            getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return "\(directory)/blemu-\(getpid()).sock"
    }
}
