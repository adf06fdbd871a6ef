import ArgumentParser
import DBus
import Foundation
import GATTModel
import Logging
import ProbeCentral

/// `blemu probe`: be the phone. Discover a peripheral through bluetoothd, connect, read and listen to everything.
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Act as a BLE central: find a peripheral, connect, read every value, listen to notifications.",
        discussion: """
            Works through bluetoothd's D-Bus client API (Adapter1, Device1, GattCharacteristic1) on the system bus. \
            The target is ADDRESS, --name or --service (all given must match); with none, the first LE device seen. \
            The report shows the device as scanned (name, address, RSSI, advertised UUIDs), the GATT tree with the \
            Flags bluetoothd reports, every value read (SIG formats decoded, hex always, ATT errors named) and the \
            notifications received during --listen. `blemu lab run` with no command runs this against the lab's \
            peripheral.

            Example:
              blemu probe --adapter hci1 00:AA:01:00:00:00
              blemu probe --name "Polar H10 A1B2" --listen 5 --json

            Exit codes: 0 probed; 1 not found within --timeout; 2 found but Connect or service resolution failed; \
            64 usage; 69 no bus, no bluetoothd or no usable adapter; 70 bluetoothd answered unexpectedly.
            """)

    @Argument(help: "The device's address, e.g. 00:AA:01:00:00:00.")
    var address: String?

    @Option(help: "Match the advertised name (Name or Alias) exactly.")
    var name: String?

    @Option(help: "Match an advertised service UUID (180D or the full form).")
    var service: String?

    @Option(help: "The adapter to use (default: the first one that is not advertising).")
    var adapter: String?

    @Option(help: "Seconds to collect notifications after subscribing.")
    var listen: Double = 3

    @Option(help: "Seconds to wait for each of: the device to appear, Connect, service resolution.")
    var timeout: Double = 20

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Option(help: "The bus: system (default), session, or a D-Bus address such as unix:path=/run/bus.")
    var bus = BusAddress.system

    @Flag(name: .shortAndLong, help: "Log every step (and every D-Bus call at trace level) to stderr.")
    var verbose = false

    func validate() throws {
        guard listen >= 0, timeout > 0 else { throw ValidationError("--listen must be >= 0 and --timeout > 0") }
        if let address, address.split(separator: ":").count != 6 {
            throw ValidationError("ADDRESS must look like 00:AA:01:00:00:00, got \(address)")
        }
        if let service, BluetoothUUID(service) == nil {
            throw ValidationError("--service must be a UUID such as 180D, got \(service)")
        }
    }

    func run() async throws {
        var logger = Logger(label: "blemu.probe", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .trace : .warning
        let request = ProbeRequest(
            adapter: adapter, address: address, name: name, service: service,
            timeout: .milliseconds(Int64(timeout * 1000)), listen: .milliseconds(Int64(listen * 1000)))
        do {
            let central = try Central(bus: bus, logger: logger)
            defer { central.close() }
            let report = try await central.probe(request)
            print(json ? report.json : report.text, terminator: "")
        } catch {
            FileHandle.standardError.write(Data((error.description + "\n").utf8))
            throw ExitCode(error.exitCode)
        }
    }
}
