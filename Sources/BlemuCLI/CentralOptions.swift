import ArgumentParser
import BlueZModel
import DBus
import GATTModel
import Logging
import ProbeCentral
import Serving

/// The options of a command that acts as a central through bluetoothd (`probe`, `clone`): which device, from which
/// adapter, how long to wait, on which bus.
struct CentralOptions: ParsableArguments {
    @Argument(help: "The device's address, e.g. 00:AA:01:00:00:00.")
    var address: String?

    @Option(help: "Match the advertised name (Name or Alias) exactly.")
    var name: String?

    @Option(help: "The adapter to use (default: the first one that is not advertising).")
    var adapter: String?

    @Option(help: "Seconds to wait for each of: the device to appear, Connect (or Pair), service resolution.")
    var timeout: Double = 20

    @Flag(
        help: ArgumentHelp(
            "Pair before reading, with blemu's pairing agent.",
            discussion: "Device1.Pair connects and pairs; without --passkey the agent has no input and no output "
                + "(Just Works: encrypted, not authenticated)."))
    var pair = false

    @Option(
        help: ArgumentHelp(
            "With --pair: type this six-digit passkey (the agent is keyboard-only), e.g. a profile's `passkey`.",
            valueName: "PASSKEY"))
    var passkey: UInt32?

    @Option(help: "The bus: system (default), session, or a D-Bus address such as unix:path=/run/bus.")
    var bus = BusAddress.system

    @Flag(name: .shortAndLong, help: "Log every step (and every D-Bus call at trace level) to stderr.")
    var verbose = false

    func validate() throws {
        // A number of seconds from the command line becomes a Duration of milliseconds: infinity, NaN or 1e300
        // would trap in that conversion, so they are usage errors here.
        guard timeout > 0, timeout <= Self.longest else {
            throw ValidationError(
                "--timeout takes seconds, more than 0 and at most \(Int(Self.longest)), got \(timeout)")
        }
        if let passkey {
            guard pair else { throw ValidationError("--passkey needs --pair") }
            guard passkey <= 999_999 else { throw ValidationError("--passkey takes six digits, got \(passkey)") }
        }
        if let address, address.split(separator: ":").count != 6 {
            throw ValidationError("ADDRESS must look like 00:AA:01:00:00:00, got \(address)")
        }
    }

    /// The longest --timeout (and `probe --listen`), in seconds: a day.
    static let longest: Double = 86_400

    /// The link the probe's pairing gives: Just Works is encrypted, a typed passkey authenticated; none unpaired.
    var linkSecurity: SecurityLevel { pair ? (passkey == nil ? .encrypted : .authenticated) : .none }

    /// The request for this device, with the command's own service filter and listening time, and whether the
    /// advertised name is worth waiting for.
    func request(service: String? = nil, listen: Duration, waitsForName: Bool = false) -> ProbeRequest {
        ProbeRequest(
            adapter: adapter, address: address, name: name, service: service,
            timeout: .milliseconds(Int64(timeout * 1000)), listen: listen,
            pairing: pair
                ? PairingSettings(ioCapability: passkey == nil ? .noInputNoOutput : .keyboardOnly, passkey: passkey)
                : nil,
            waitsForName: waitsForName)
    }

    /// Probes the device: the report, or the error's message on stderr and its exit code.
    /// `plan` names the writes to make after listening (`verify --writes`).
    func probe(
        service: String? = nil, listen: Duration, label: String, waitsForName: Bool = false,
        writing plan: (@Sendable (ProbeReport) -> [ProbeWrite])? = nil
    ) async throws -> ProbeReport {
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .trace : .warning
        do {
            let central = try BlueZCentral(bus: bus, logger: logger)
            defer { central.close() }
            return try await central.probe(
                request(service: service, listen: listen, waitsForName: waitsForName), writing: plan)
        } catch {
            Console.error("blemu: \(error.description)")
            throw ExitCode(error.exitCode)
        }
    }
}
