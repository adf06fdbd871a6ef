import ArgumentParser
import BlueZ
import DBus
import FoundationEssentials
import GATTModel
import GATTProfile
import Logging
import ProbeCentral
import Serving

/// `blemu clone`: be the phone, then write down what it saw as a profile that validates and runs.
struct CloneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Write a profile from a live device: its advertisement, GATT tree and readable values.",
        discussion: """
            Probes the device as `blemu probe` does (bluetoothd's client API on the central's adapter), then writes \
            a profile: the advertisement as scanned (name, service UUIDs, appearance, manufacturer and service \
            data, TX power), every service and characteristic with the properties a central sees, SIG keys as ids \
            where known, each readable value (typed `fields` where blemu knows the SIG layout, such as a heart rate \
            measurement or a battery level, with `max-length` when such a value is writable and of fixed size; \
            else hex: a constant `value` when the characteristic only reads, else `initial`), user descriptions \
            and presentation formats. What a profile cannot declare is left out with \
            a comment saying what and why (GAP and GATT, the CCCD, values over 512 bytes); a read refused for \
            encryption or authentication becomes the `encryption` it implies (or pair first: --pair, with \
            --passkey when the device needs one typed). The header names the address, bluetoothd's version and \
            the date. The profile is checked before it is written, and FILE appears whole or not at all: when the \
            link drops midway, nothing is written and the message says how far the reads got. With --record, what \
            the device notifies or indicates during DURATION is written as `time,value` CSV files next to FILE and \
            replayed by schedules at the times it arrived, from each first subscription, over and over.

            Example:
              blemu clone --adapter hci1 00:AA:01:00:00:00 -o sensor.yaml
              blemu lab run --profile profiles/heart-rate.yaml -- \\
                  sh -c 'blemu clone --adapter $BLEMU_LAB_CENTRAL $BLEMU_LAB_PERIPHERAL_ADDRESS'

            Exit codes: 0 written; 1 not found within --timeout (the message lists the devices seen); 2 found but \
            Connect, Pair or service resolution failed, or the link dropped midway (--probe-json still gets the \
            report, which says so); 64 usage; 69 no bus, no bluetoothd or no usable adapter; 70 the clone did not \
            validate (a blemu bug: please report it); 73 FILE cannot be written.
            """)

    @OptionGroup var central: CentralOptions

    @Option(name: [.short, .long], help: "Write the profile to FILE (default: stdout).")
    var output: String?

    @Option(help: "Also write the probe report the profile was made from, as JSON (what `blemu probe --json` prints).")
    var probeJSON: String?

    @Option(
        help: ArgumentHelp(
            "Subscribe to everything that notifies or indicates for DURATION (5s, 500ms) and replay it (needs -o).",
            discussion: "Each stream becomes a `time,value` CSV next to FILE and a schedule that replays it at the "
                + "times it arrived."),
        transform: { text in
            guard let duration = DurationText.parse(text) else {
                throw ValidationError("--record takes a duration such as 5s or 500ms, got \(text)")
            }
            return duration
        })
    var record: Duration?

    func validate() throws {
        guard central.address != nil || central.name != nil else {
            throw ValidationError("give the device's ADDRESS or --name")
        }
        if record != nil && output == nil {
            throw ValidationError("--record needs -o FILE: the recordings are CSV files written next to it")
        }
    }

    func run() async throws {
        // Without --record no listening: a clone holds what a central reads.
        let report = try await central.probe(listen: record ?? .zero, label: "blemu.clone")
        // The report is whole even when the link dropped (it says so): the evidence of what the central got.
        if let probeJSON { try OutputFile.write(report.json, to: probeJSON) }
        if let linkLoss = report.linkLoss {
            let read = report.characteristics.filter { $0.read?.value != nil }.count
            Console.error(
                "blemu: the link to \(report.device.address) dropped \(linkLoss.summary); got \(report.services.count) "
                    + "services, \(report.characteristics.count) characteristics, \(read) values; nothing written")
            throw ExitCode(2)
        }
        let source = ProfileClone.Source(
            adapter: report.adapter, date: Date().formatted(.iso8601),
            bluez: await BluetoothdVersion.of(bus: central.bus))
        let stem = output.map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent } ?? "clone"
        let clone = ProfileClone.clone(from: report, source: source, recordingStem: stem)
        let text = clone.yaml
        let checked = ProfileLoader.decode(text: text, fileName: output ?? "<clone>")
        guard !checked.hasErrors else {
            Console.error(checked.renderedDiagnostics)
            Console.error("blemu: the clone of \(report.device.address) does not validate; nothing written")
            throw ExitCode.software
        }
        guard let output else {
            print(text, terminator: "")
            return
        }
        // The recordings first: a profile that appears refers to files that are there.
        let directory = URL(fileURLWithPath: output).deletingLastPathComponent()
        for (name, csv) in clone.recordings.sorted(by: { $0.key < $1.key }) {
            try OutputFile.write(csv, to: directory.appendingPathComponent(name).path)
        }
        try OutputFile.write(text, to: output)
        let kept = report.services.filter { ProfileClone.skippedService($0) == nil }.count
        Console.error(
            "blemu: wrote \(output): \(kept) services from \(report.device.address)"
                + (clone.recordings.isEmpty ? "" : ", \(clone.recordings.count) recordings"))
    }
}
