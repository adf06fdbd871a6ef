// What the host and the VM exchange through the results directory (the 9p share): the guest's progress, exit
// code, BlueZ version, controllers and logs read back, and the profiles and blemu binary copied where the guest
// sees them.
import FoundationEssentials
import LocalIO
import Logging

extension LabMachine {
    /// Steps appended to the `steps` file since `offset` bytes; moves `offset` past the complete lines read.
    func newSteps(after offset: inout Int, elapsed: Duration) -> [LabRun.Step] {
        guard
            let data = FileManager.default.contents(
                atPath: configuration.resultsDirectory + "/" + GuestStack.File.steps),
            data.count > offset, let lastNewline = data.lastIndex(of: UInt8(ascii: "\n")), lastNewline >= offset
        else { return [] }
        let text = String(decoding: data[offset...lastNewline], as: UTF8.self)
        offset = lastNewline + 1
        return text.split(separator: "\n").map { line in
            let words = line.split(separator: " ", maxSplits: 1).map(String.init)
            return LabRun.Step(
                name: words.count > 1 ? words[1] : words[0], sinceStart: elapsed, guestUptime: Double(words[0]))
        }
    }

    /// The exit code the VM wrote, or nil when it did not get that far.
    func readExitCode() -> Int32? {
        let path = configuration.resultsDirectory + "/" + GuestStack.File.exitCode
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int32(text.trimmingWhitespace())
    }

    /// The version recorded before the boot; empty when the file is gone.
    func readBlueZVersion() -> String {
        let path = configuration.resultsDirectory + "/" + GuestStack.File.bluezVersion
        return ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").trimmingWhitespace()
    }

    /// The kernel release the VM wrote; nil when it did not get that far.
    func readKernelRelease() -> String? {
        let path = configuration.resultsDirectory + "/" + GuestStack.File.kernelRelease
        return (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingWhitespace()
    }

    /// The controllers and addresses the VM wrote (`hci0 00:AA:01:00:00:00` lines).
    func readControllers() -> [LabRun.Controller] {
        let path = configuration.resultsDirectory + "/" + GuestStack.File.controllers
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map { line in
            let words = line.split(separator: " ").map(String.init)
            return LabRun.Controller(name: words.first ?? "", address: words.count > 1 ? words[1] : "")
        }
    }

    /// The ends of the logs that explain a failure in `step`: the console always, then the step's own logs.
    func logTail(for step: String) -> String {
        var names = [Self.consoleFile]
        switch step {
        case "dbus": names.append(GuestStack.File.dbus)
        case "radio": names += [RootCanalAir.relayLogFile, RootCanalAir.logFile]
        case "controllers", "radio-again":
            names += [GuestStack.File.btvirt, RootCanalAir.relayLogFile, RootCanalAir.logFile, GuestStack.File.btmon]
        case "bluetoothd", "power": names += [GuestStack.File.bluetoothd, GuestStack.File.btmon]
        case "command": names += [GuestStack.File.command, GuestStack.File.bluetoothd]
        default:
            if step.hasPrefix("peripheral-") {
                names += [
                    GuestStack.File.peripheral(String(step.dropFirst("peripheral-".count))), GuestStack.File.bluetoothd,
                ]
            }
        }
        return names.compactMap { name -> String? in
            let path = configuration.resultsDirectory + "/" + name
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), !text.isEmpty else { return nil }
            // The console starts with SeaBIOS's terminal escapes: drop them and any other control characters.
            let unescaped = text.replacing(#/\x1B(\[[0-9;?]*[A-Za-z]|c)/#, with: "")
            let printable = String(unescaped.unicodeScalars.filter { $0 == "\n" || $0 == "\t" || $0.value >= 0x20 })
            let lines = printable.split(separator: "\n", omittingEmptySubsequences: false).suffix(20)
            return "--- last lines of \(path)\n" + lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Each profile's path and its copy's text and name suffix, a fleet's copies named apart (`ProfileCopies`), in
    /// profile order.
    func profileCopies() throws -> [(path: String, copy: ProfileCopies.Copy)] {
        do {
            let texts = try configuration.profiles.map { path in
                (path: path, text: try String(contentsOfFile: path, encoding: .utf8))
            }
            return Array(zip(configuration.profiles, ProfileCopies.plan(texts))).map { (path: $0, copy: $1) }
        } catch {
            throw LabError.io("cannot read the profiles: \(error)")
        }
    }

    /// Writes `machine`'s share of `copies` into its results directory (`profiles/hciN-<name>`, N its controller),
    /// where its VM sees them whatever their host paths (under /tmp, for one); returns each copy's path and the name
    /// suffix its `blemu run` adds, in controller order.
    func copyProfiles(
        _ copies: [(path: String, copy: ProfileCopies.Copy)], for machine: LabFleet.Machine
    ) throws -> [GuestStack.Peripheral] {
        let share = copies[machine.profiles]
        guard !share.isEmpty else { return [] }
        let directory = machine.configuration.resultsDirectory + "/profiles"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return try share.enumerated().map { index, pair in
                let copy = "\(directory)/hci\(index)-\(URL(fileURLWithPath: pair.path).lastPathComponent)"
                try pair.copy.text.write(toFile: copy, atomically: true, encoding: .utf8)
                return GuestStack.Peripheral(profile: copy, nameSuffix: pair.copy.nameSuffix)
            }
        } catch {
            throw LabError.io("cannot copy the profiles into \(directory): \(error)")
        }
    }

    /// Copies the blemu binary into `<results>/bin` when the VM cannot see it where it is (a checkout under /tmp),
    /// with the `blemu-cli` beside it that blemu hands every command but `run` to (`--ui`'s views included).
    func copyBlemuWhereTheGuestSeesIt(_ configuration: LabConfiguration) throws {
        guard let blemu = configuration.blemuExecutable, let guest = configuration.guestBlemuExecutable,
            guest != blemu
        else { return }
        let files = FileManager.default
        let directory = LocalFile.split(blemu).directory
        let guestDirectory = LocalFile.split(guest).directory
        do {
            try files.createDirectory(atPath: guestDirectory, withIntermediateDirectories: true)
            try? files.removeItem(atPath: guest)
            try files.copyItem(atPath: blemu, toPath: guest)
            for name in ["blemu-cli"] where files.isExecutableFile(atPath: directory + "/" + name) {
                try? files.removeItem(atPath: guestDirectory + "/" + name)
                try files.copyItem(atPath: directory + "/" + name, toPath: guestDirectory + "/" + name)
            }
        } catch {
            throw LabError.io("cannot copy \(blemu) into the results directory for the VM: \(error)")
        }
    }

    /// Writes `text` to `path`, as a `LabError.io` on failure.
    func write(_ text: String, to path: String) throws {
        do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
            throw LabError.io("cannot write \(path): \(error)")
        }
    }
}
