import BlueZModel
import Foundation
import Testing

/// The CLI as a user meets it: exit codes, output on the right stream, JSON that parses.
@Suite struct CommandLineTests {
    @Test func everyBundledProfileValidatesWithExitZero() async throws {
        let profiles = BlemuProcess.bundledProfiles
        #expect(profiles.count >= 8)
        for profile in profiles {
            let outcome = try await BlemuProcess.run("validate", profile)
            #expect(outcome.status == 0, "\(profile): \(outcome.stderr)")
            // No warning either.
            #expect(outcome.stdout.contains("ok (0 errors, 0 warnings)"), "\(profile): \(outcome.stdout)")
            #expect(outcome.stderr.isEmpty, "\(profile): \(outcome.stderr)")
        }
    }

    @Test func anInvalidProfileExitsWithDataErrorAndAPositionedDiagnostic() async throws {
        let outcome = try await BlemuProcess.run("validate", "fixtures/invalid/advertised-service-not-published.yaml")
        #expect(outcome.status == 65)
        #expect(outcome.stderr.contains("advertised-service-not-published.yaml:4:19: error: advertised service 180D"))
    }

    /// `verify --report`: a real central's report of the served heart-rate profile (5.87) conforms (0) and writes one
    /// JUnit test case per check; against the thermostat it does not (1); a missing report is 66, a file that is
    /// no report 65, and --report with an address, --listen or --writes a usage error.
    @Test func verifyOfASavedReportExitsWithItsVerdict() async throws {
        let report = "Tests/ProbeCentralTests/Fixtures/5.87/heart-rate.json"
        let directory = NSTemporaryDirectory() + "blemu-verify-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let junit = directory + "/verify.xml"
        let conforming = try await BlemuProcess.run(
            "verify", "profiles/heart-rate.yaml", "--report", report, "--junit", junit)
        #expect(conforming.status == 0, "\(conforming.stdout)\(conforming.stderr)")
        #expect(
            conforming.stdout.contains(" 0 failed, ") && conforming.stdout.hasSuffix("; the device conforms\n"),
            "\(conforming.stdout)")
        let cases = try String(contentsOfFile: junit, encoding: .utf8).components(separatedBy: "<testcase ").count - 1
        #expect(cases == conforming.stdout.split(separator: "\n").count - 2)

        let other = try await BlemuProcess.run("verify", "profiles/thermostat.yaml", "--report", report, "--json")
        #expect(other.status == 1)
        #expect(other.stdout.contains(#""conforms" : false"#), "\(other.stdout)")

        #expect(
            try await BlemuProcess.run("verify", "profiles/heart-rate.yaml", "--report", directory + "/none").status
                == 66)
        #expect(
            try await BlemuProcess.run("verify", "profiles/heart-rate.yaml", "--report", "profiles/heart-rate.yaml")
                .status == 65)
        let both = try await BlemuProcess.run(
            "verify", "profiles/heart-rate.yaml", "00:AA:01:00:00:00", "--report", report)
        #expect(both.status == 64)
        let listening = try await BlemuProcess.run(
            "verify", "profiles/heart-rate.yaml", "--report", report, "--listen", "5s")
        #expect(listening.status == 64, "\(listening.stderr)")
        // A saved report cannot be written to: --writes needs the device.
        let writing = try await BlemuProcess.run("verify", "profiles/heart-rate.yaml", "--report", report, "--writes")
        #expect(writing.status == 64 && writing.stderr.contains("--writes"), "\(writing.stderr)")
    }

    /// `validate` used to pass a profile `run` then refused (a replay file that is not there).
    @Test func validateMakesTheChecksRunMakesAndRunRefusesTheSame() async throws {
        let directory = NSTemporaryDirectory() + "blemu-validate-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let profile = directory + "/replaying.yaml"
        try """
        name: Replaying
        services:
          - id: s
            uuid: battery
            characteristics:
              - id: level
                uuid: battery-level
                properties: [read, notify]
                fields: [{ name: percent, type: u8, value: 50 }]
        behaviour:
          schedules:
            - characteristic: level
              interval: 1s
              fields: { percent: { replay: { file: levels.csv } } }
        """.write(toFile: profile, atomically: true, encoding: .utf8)
        let validated = try await BlemuProcess.run("validate", profile)
        #expect(validated.status == 65, "\(validated.stdout)\(validated.stderr)")
        #expect(validated.stderr.contains("\(profile): error: ") && validated.stderr.contains("levels.csv"))
        #expect(validated.stdout.contains("invalid (1 error, 0 warnings)"))
        let ran = try await BlemuProcess.run("run", profile, "--bus", "unix:path=/nonexistent")
        #expect(ran.status == 65)
        try "time,value\n0,50\n".write(toFile: directory + "/levels.csv", atomically: true, encoding: .utf8)
        #expect(try await BlemuProcess.run("validate", profile).status == 0)
    }

    /// An invalid profile used to be found only after the VM booted, as 69 and naming the copy.
    @Test func labRunChecksEveryProfileOnTheHostBeforeBooting() async throws {
        let outcome = try await BlemuProcess.run(
            "lab", "run", "--results", "/nonexistent/never-created", "--profile", "profiles/heart-rate.yaml",
            "--profile", "fixtures/invalid/advertised-service-not-published.yaml", "--", "true")
        #expect(outcome.status == 65)
        #expect(outcome.stderr.contains("fixtures/invalid/advertised-service-not-published.yaml:4:19: error:"))
        #expect(!outcome.stderr.contains("booting"))
        #expect(try await BlemuProcess.run("lab", "run", "--profile", "profiles/nope.yaml", "--", "true").status == 66)
    }

    /// The Python package is versioned with the CLI.
    @Test func thePythonPackageHasTheCLIsVersion() async throws {
        let version = try await BlemuProcess.run("--version").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.split(separator: ".").count == 3)
        let root = BlemuProcess.repositoryRoot.path
        let project = try String(contentsOfFile: root + "/python/pyproject.toml", encoding: .utf8)
        let module = try String(contentsOfFile: root + "/python/src/blemu/__init__.py", encoding: .utf8)
        #expect(project.contains("\nversion = \"\(version)\"\n"))
        #expect(module.contains("\n__version__ = \"\(version)\"\n"))
    }

    @Test func anUnreadableFileExitsWithNoInput() async throws {
        let outcome = try await BlemuProcess.run("show", "profiles/does-not-exist.yaml")
        #expect(outcome.status == 66)
        #expect(outcome.stderr.contains("cannot read profiles/does-not-exist.yaml"))
    }

    @Test func aWrongCommandLineExitsWithUsage() async throws {
        #expect(try await BlemuProcess.run("frobnicate").status == 64)
        #expect(try await BlemuProcess.run("validate").status == 64)
        #expect(try await BlemuProcess.run("show", "--bogus", "profiles/battery.yaml").status == 64)
    }

    /// `show` lists the behaviour as well as the tree.
    @Test func showSaysWhatTheDeviceDoesOnItsOwnAndWhenWritten() async throws {
        let outcome = try await BlemuProcess.run("show", "profiles/heart-rate.yaml")
        #expect(outcome.stdout.contains("  behaviour:\n"))
        #expect(outcome.stdout.contains("    schedule heart-rate-measurement: notify every 1s, while subscribed\n"))
        #expect(
            outcome.stdout.contains("      bpm: random walk from 72, steps of at most 2, within 55...110 (seed 10)"))
        #expect(
            outcome.stdout.contains(
                "    on write to heart-rate-control-point: refuse with 0x80 Application Error unless it is one of 01, "
                    + "then store"))
        #expect(outcome.stdout.contains("value (cached, 1 byte, max 512): 01"))
    }

    @Test func showDecodesTheHeartRateMeasurementByItsFields() async throws {
        let outcome = try await BlemuProcess.run("show", "profiles/heart-rate.yaml")
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("2A37 Heart Rate Measurement"))
        #expect(outcome.stdout.contains("bpm (u8): 72"))
    }

    @Test func showJSONListsEveryServiceAndCharacteristicId() async throws {
        let outcome = try await BlemuProcess.run("show", "--json", "profiles/heart-rate.yaml")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        let services = try #require(json["services"] as? [[String: Any]])
        #expect(services.compactMap { $0["uuid"] as? String }.contains("180D"))
        let characteristics = services.flatMap { $0["characteristics"] as? [[String: Any]] ?? [] }
        #expect(
            characteristics.contains {
                ($0["bluezFlags"] as? [String]) == ["notify"] && $0["uuid"] as? String == "2A37"
            })
    }

    @Test func advJSONGivesTheTransferServiceAndNameBytes() async throws {
        let outcome = try await BlemuProcess.run("adv", "--json", "profiles/transfer.yaml")
        #expect(outcome.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        // 0x11 bytes of 128-bit list (0x07) holding E71EE188-... little-endian, then Flags 0x06 written last.
        #expect(json["adv"] as? String == "11070C90FD7BD7125580D64E9F2788E11EE7020106")
        // "Transfer" fits the 8 name bytes the Core Bluetooth rule leaves: complete local name 0x09.
        #expect(json["scanResponse"] as? String == "09095472616E73666572")
        #expect((json["overflow"] as? [String])?.isEmpty == true)
        #expect(json["mode"] as? String == "legacy" && json["advLimit"] as? Int == 31 && json["requires"] == nil)
    }

    @Test func advJSONOfAnExtendedProfileSaysWhatItNeedsAndCarriesTheWholeData() async throws {
        let outcome = try await BlemuProcess.run("adv", "--json", "Tests/LabTests/Fixtures/lab-extended.yaml")
        #expect(outcome.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(json["mode"] as? String == "extended" && json["advLimit"] as? Int == 251)
        #expect((json["requires"] as? String)?.contains("BlueZ >= 5.69") == true)
        #expect((json["adv"] as? String)?.count == 2 * 152 && json["scanResponse"] as? String == "")
    }

    @Test func cloneWithoutABusExitsUnavailableAndWritesNothing() async throws {
        let output = "/tmp/blemu-clone-\(UUID().uuidString.prefix(8)).yaml"
        let outcome = try await BlemuProcess.run(
            "clone", "--bus", "unix:path=/nonexistent/bus", "00:AA:01:00:00:00", "-o", output)
        #expect(outcome.status == 69)
        #expect(outcome.stderr.contains("cannot reach the bus"), "\(outcome.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func labCopiesMakeOnePeripheralEachAndStopWhereBtvirtDoes() async throws {
        // Two profiles, eight copies each: 16 peripherals and the central need 17 controllers, one more than btvirt
        // makes; refused before anything boots, naming why.
        let fleet = try await BlemuProcess.run(
            "lab", "run", "--profile", "profiles/heart-rate.yaml", "--profile", "profiles/battery.yaml", "--copies",
            "8", "--results", "/tmp/blemu-fleet-refused", "--", "true")
        #expect(fleet.status == 64)
        #expect(fleet.stderr.contains("--controllers must be at most 16, got 17"), "\(fleet.stderr)")
        #expect(fleet.stderr.contains("a fleet is at most 15 devices"), "\(fleet.stderr)")
        let zero = try await BlemuProcess.run("lab", "run", "--profile", "profiles/heart-rate.yaml", "--copies", "0")
        #expect(zero.status == 64)
        #expect(zero.stderr.contains("--copies must be 1...15 on btvirt, got 0"), "\(zero.stderr)")
        #expect(!zero.stderr.contains("rootcanal"), "no fleet to spread: \(zero.stderr)")
    }

    @Test func cloneNeedsAnAddressOrAName() async throws {
        let outcome = try await BlemuProcess.run("clone")
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains("give the device's ADDRESS or --name"))
    }

    @Test func probeWithoutABusExitsUnavailable() async throws {
        let outcome = try await BlemuProcess.run("probe", "--bus", "unix:path=/nonexistent/bus", "00:AA:01:00:00:00")
        #expect(outcome.status == 69)
        #expect(outcome.stderr.contains("probe: cannot reach the bus"))
    }

    @Test func probeRefusesAMalformedAddressOrServiceWithUsage() async throws {
        #expect(try await BlemuProcess.run("probe", "00:AA").status == 64)
        #expect(try await BlemuProcess.run("probe", "--service", "heart", "00:AA:01:00:00:00").status == 64)
    }

    /// Seconds that cannot be a Duration (infinity, NaN, 1e300) are usage errors: `probe --listen inf` used to
    /// trap converting them, after connecting to the bus.
    @Test func timesThatCannotBeDurationsAreUsageErrors() async throws {
        let address = "00:AA:01:00:00:00"
        for arguments in [
            ["probe", "--listen", "inf", address], ["probe", "--listen", "nan", address],
            ["probe", "--timeout", "inf", address], ["probe", "--timeout", "1e300", address],
            ["clone", "--timeout", "inf", address],
            ["verify", "profiles/heart-rate.yaml", "--listen", "inf", address],
            ["verify", "profiles/heart-rate.yaml", "--listen", "1e300s", address],
            ["verify", "profiles/heart-rate.yaml", "--timeout", "nan", address],
        ] {
            let outcome = try await BlemuProcess.run(arguments + ["--bus", "unix:path=/nonexistent"])
            #expect(outcome.status == 64, "\(arguments): \(outcome.stderr)")
        }
        // A bare number is seconds.
        let seconds = try await BlemuProcess.run(
            "verify", "profiles/heart-rate.yaml", "--listen", "2.5", address, "--bus", "unix:path=/nonexistent")
        #expect(seconds.status == 69, "\(seconds.stderr)")
    }

    @Test func everyCommandsHelpShowsAnExample() async throws {
        for command in ["validate", "show", "adv", "probe", "verify"] {
            let outcome = try await BlemuProcess.run(command, "--help")
            #expect(outcome.status == 0)
            #expect(outcome.stdout.contains("Example:"), "\(command) --help has no example")
        }
    }

    /// A command this blemu lacks is a usage error, with or without `--help`: ArgumentParser used to print the
    /// root's help for `blemu nonsense --help` and exit 0, so a script could not tell that the command is missing.
    @Test func anUnknownCommandIsAUsageErrorEvenWithHelp() async throws {
        for arguments in [["nonsense", "--help"], ["verfiy"], ["nonsense", "x.yaml"]] {
            let outcome = try await BlemuProcess.run(arguments)
            #expect(outcome.status == 64, "\(arguments): \(outcome.stdout)")
            #expect(outcome.stderr.contains("'\(arguments[0])' is not a blemu command"), "\(outcome.stderr)")
            #expect(outcome.stdout.isEmpty)
        }
        // Real commands and `help` still parse as before.
        #expect(try await BlemuProcess.run("help", "validate").status == 0)
        #expect(try await BlemuProcess.run("doctor", "--help").status == 0)
    }
}
