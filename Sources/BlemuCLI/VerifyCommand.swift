import ArgumentParser
import Emulation
import FoundationEssentials
import GATTModel
import GATTProfile
import ProbeCentral
import Serving

/// `blemu verify`: the profile as the firmware's acceptance test. A central checks a live device (or a saved probe
/// report) against a profile, one check per promise.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Check that a device does what a profile says: advertisement, GATT tree, values, notifications, writes.",
        discussion: """
            Probes the device as `blemu probe` does (bluetoothd's client API on the central's adapter), or reads a \
            report `blemu probe --json` saved (--report), and checks every promise of PROFILE that a central can \
            see. Each check is pass, fail or skip, with what was expected and what was seen:
              advertisement  the local name (a shortened prefix passes), each advertised service UUID (one that \
            does not fit Core Bluetooth's legacy budget is skipped: a device may leave it out), manufacturer and \
            service data, appearance, TX power; what the device advertises that the profile does not
              gatt           the GAP device name, every service, characteristic (with exactly its properties) and \
            descriptor; what the device has that the profile does not declare (bluetoothd's own GAP, GATT, \
            PnP-only Device Information, CCCDs and Extended Properties are not the device's)
              value          constants byte for byte, typed values by their fields and within the ranges the \
            behaviour generates, user descriptions and presentation formats; a read the profile guards with \
            encryption and the device refused is skipped (check it with --pair)
              security       each read and subscription the profile guards: refused on a link that never \
            paired, made once --pair paired it (one made after bluetoothd paired by itself, or on a bonded device, \
            is skipped); with --writes and no --pair, each write it guards is refused (written the value read from it)
              notification   each characteristic a schedule notifies or indicates, at its interval (the median gap \
            over --listen, within a quarter), each value decoding by its fields and within its ranges
              write          only with --writes, after listening: each writable characteristic accepts a value the \
            profile allows (read back where it reads), refuses a value each write-rule check refuses with that \
            check's error, and gets the value read before written back (restored); these writes to a \
            characteristic the profile guards with encryption need --pair
            Without --writes nothing is written to the device. docs/verify.md walks through a firmware check in CI.

            Example:
              blemu verify profiles/heart-rate.yaml 00:AA:01:00:00:00 --adapter hci1
              blemu verify profiles/heart-rate.yaml --name "Polar H10 A1B2" --junit verify.xml
              blemu verify profiles/thermostat.yaml 00:AA:01:00:00:01 --pair --writes
              blemu probe --json 00:AA:01:00:00:00 > seen.json && blemu verify profiles/heart-rate.yaml --report seen.json

            Exit codes: 0 the device conforms; 1 a check failed; 2 it could not finish (not found within \
            --timeout: the message lists the devices seen; Connect, Pair or service resolution failed; bluetoothd \
            answered in a way blemu does not understand; the link dropped: the message says after what); 64 usage; \
            65 PROFILE or the report is invalid; 66 a file is missing; 69 no bus, no bluetoothd or no usable \
            adapter; 73 the JUnit file cannot be written.
            """)

    @Argument(help: "The profile (YAML) the device should keep.")
    var profile: String

    @OptionGroup var central: CentralOptions

    @Option(help: "Check this saved `blemu probe --json` report instead of probing a device.")
    var report: String?

    @Option(
        help: ArgumentHelp(
            "Listen this long after subscribing (default 5s; 0 skips the pace checks).",
            discussion: "Every characteristic a schedule notifies or indicates is checked for its interval: listen "
                + "at least three intervals."),
        transform: { text in
            // A bare number is seconds, as `probe --listen` takes it; DurationText refuses what would not fit.
            guard let duration = DurationText.parse(Double(text) == nil ? text : text + "s"),
                duration <= .seconds(CentralOptions.longest)
            else {
                throw ValidationError("--listen takes a duration such as 5s or 500ms, up to a day, got \(text)")
            }
            return duration
        })
    var listen: Duration?

    @Flag(
        help: ArgumentHelp(
            "Also check writes (this changes the device): valid values accepted, invalid ones refused with the "
                + "profile's errors, and what was there before written back.",
            discussion: "Every write made and its outcome is in the report; a value that could not be written back "
                + "fails its `restored` check, and one the device does not let a central read is skipped."))
    var writes = false

    @Flag(help: "Print the checks as JSON.")
    var json = false

    @Option(help: "Also write the checks as JUnit XML to FILE (one test case per check), whole or not at all.")
    var junit: String?

    func validate() throws {
        guard report != nil || central.address != nil || central.name != nil else {
            throw ValidationError("give the device's ADDRESS or --name, or a saved report with --report")
        }
        if report != nil
            && (central.address != nil || central.name != nil || central.pair || listen != nil || writes)
        {
            throw ValidationError(
                "--report checks a saved report: give no ADDRESS, --name, --pair, --listen or --writes with it (the "
                    + "report says how long its probe listened)")
        }
    }

    func run() async throws {
        let declared = try ProfileInput.load(profile)
        let seen = try await probeReport(declared)
        let verification = ProfileVerifier.verify(declared, against: seen)
        print(json ? verification.json : verification.text, terminator: "")
        if let junit { try OutputFile.write(verification.junit, to: junit) }
        if !verification.conforms { throw ExitCode(1) }
    }

    /// The report to check: read from --report, or probed (every probe failure ends with 2, or 69 when there is
    /// no Bluetooth to probe with), with `declared`'s writes after listening when --writes asks. A report of a link
    /// that dropped is not checked (what is missing would fail), but what it left written is named.
    private func probeReport(_ declared: PeripheralProfile) async throws -> ProbeReport {
        let seen: ProbeReport
        if let path = report {
            guard let data = FileManager.default.contents(atPath: path) else {
                Console.error("blemu: cannot read \(path)")
                throw ExitCode.noInput
            }
            do { seen = try JSONDecoder().decode(ProbeReport.self, from: data) } catch {
                Console.error("blemu: \(path) is not a `blemu probe --json` report: \(error)")
                throw ExitCode.badProfile
            }
        } else {
            // The profile's own protocol engine is the model of what each control point must answer.
            var exchanges: ExchangePlan?
            if writes {
                do { exchanges = try ExchangePlanner.plan(for: declared) } catch {
                    Console.error("blemu: \(error)")
                    throw ExitCode.badProfile
                }
            }
            do {
                // A declared name is checked, so the probe waits for the scan response that carries it.
                seen = try await central.probe(
                    listen: listen ?? .seconds(5), label: "blemu.verify",
                    waitsForName: declared.advertisement.localName != nil,
                    writing: writes
                        ? ProfileVerifier.writes(for: declared, security: central.linkSecurity, exchanges: exchanges)
                        : nil)
            } catch let code as ExitCode where code.rawValue == 1 || code == .software {
                // Not found (probe's 1) or a reply from bluetoothd the probe does not understand (probe's 70): for
                // verify both mean it could not finish, and 1 says the device does not conform.
                throw ExitCode(2)
            }
        }
        if let linkLoss = seen.linkLoss {
            Console.error(
                "blemu: the link to \(seen.device.address) dropped \(linkLoss.summary); nothing checked "
                    + "(what was not read would fail)")
            let changed = ProfileVerifier.leftWritten(seen.writes ?? [])
            if !changed.isEmpty {
                Console.error("blemu: not written back, so left changed: \(changed.joined(separator: ", "))")
            }
            throw ExitCode(2)
        }
        return seen
    }
}
