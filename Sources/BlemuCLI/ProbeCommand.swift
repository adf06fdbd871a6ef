import ArgumentParser
import DBus
import FoundationEssentials
import GATTModel
import Logging
import ProbeCentral
import Serving

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
            notifications received during --listen. When the link drops midway, the report says so and holds what \
            came before (exit code 0). With --pair it pairs first (--passkey for a device that needs one typed). \
            `blemu lab run` with no command runs this against the lab's peripheral.

            Example:
              blemu probe --adapter hci1 00:AA:01:00:00:00
              blemu probe --name "Polar H10 A1B2" --listen 5 --json

            Exit codes: 0 probed; 1 not found within --timeout (the message lists the devices seen); 2 found but \
            Connect, Pair or service resolution failed; 64 usage; 69 no bus, no bluetoothd or no usable adapter; 70 bluetoothd answered unexpectedly.
            """)

    @OptionGroup var central: CentralOptions

    @Option(help: "Match an advertised service UUID (180D or the full form).")
    var service: String?

    @Option(help: "Seconds to collect notifications after subscribing.")
    var listen: Double = 3

    @Flag(help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        guard listen >= 0, listen <= CentralOptions.longest else {
            throw ValidationError("--listen takes seconds, from 0 to \(Int(CentralOptions.longest)), got \(listen)")
        }
        if let service, BluetoothUUID(service) == nil {
            throw ValidationError("--service must be a UUID such as 180D, got \(service)")
        }
    }

    func run() async throws {
        let report = try await central.probe(
            service: service, listen: .milliseconds(Int64(listen * 1000)), label: "blemu.probe")
        print(json ? report.json : report.text, terminator: "")
        if let linkLoss = report.linkLoss {
            Console.error("blemu: the link to \(report.device.address) dropped \(linkLoss.summary)")
        }
    }
}
