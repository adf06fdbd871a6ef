import FoundationEssentials
import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one lab run boots: controllers, peripheral profiles, where results go, how long it may take.
///
/// Values only; `LabMachine.run` validates them and throws `LabError.invalidConfiguration` on a bad one.
public struct LabConfiguration: Sendable, Equatable {
    /// How qemu executes the guest.
    public enum Accelerator: String, Sendable, CaseIterable {
        /// KVM when /dev/kvm is usable and qemu gets the guest going with it, else TCG: a failed KVM boot (qemu
        /// dies, e.g. "failed to set MSR" on a nested layer, docs/lab.md) is booted again with TCG, which costs
        /// well under a second when KVM fails at once.
        case auto
        /// Software emulation: slower but works everywhere; multi-threaded, 128 MiB translation cache.
        case tcg
        /// Hardware virtualisation: fails with "emulation failure" where /dev/kvm is a software nested layer.
        case kvm
    }

    /// Where the virtual controllers live and what air they share (docs/lab.md, "The radio").
    public enum Radio: String, Sendable, CaseIterable {
        /// BlueZ's btvirt in the VM: controllers of one process, patched as a radio behaves (the default).
        case btvirt
        /// Android's RootCanal on the host, in a network namespace with the VM: each controller a serial port.
        case rootcanal
    }

    /// Number of virtual controllers btvirt creates (hci0, hci1, ...); at least one more than `profiles.count`.
    public var controllers: Int
    /// Profile files to run with `blemu run`, one per controller from hci0 up; copied into the results directory.
    public var profiles: [String]
    /// Host directory for every log, shared read-write with the VM at the same path; no spaces or commas.
    public var resultsDirectory: String
    /// Bound on the whole run, from qemu start to power off; the VM is killed when it passes.
    public var timeout: Duration
    /// Bound on each bring-up step inside the VM (bus, controllers, bluetoothd, power, advertisement).
    public var stepTimeout: Duration
    /// How qemu runs the guest.
    public var accelerator: Accelerator
    /// Guest memory in MiB; 512 keeps qemu near 400 MiB resident (docs/lab.md).
    public var memoryMiB: Int
    /// Absolute path of the blemu binary that the VM runs for `profiles`. One the VM cannot see (under /tmp, which
    /// is the VM's own) is copied into the results directory first: see `guestBlemuExecutable`.
    public var blemuExecutable: String?
    /// Directory the command runs in inside the VM; when hidden there (under /tmp) the results directory is used.
    public var workingDirectory: String
    /// Where the initramfs is cached between runs; created when missing.
    public var cacheDirectory: String
    /// The BlueZ to boot (bluetoothd and its tools together); nil for the system's own.
    public var bluez: BlueZInstall?
    /// The kernel to boot; nil for the system's newest (docs/lab.md, "Kernels and systems").
    public var kernel: LabKernel?
    /// Whether the virtual controllers do BR/EDR as well as LE. Off by default: pairing on a dual-mode controller
    /// pages the central over BR/EDR and hits a kernel BUG in `hci_chan_del` (docs/bluez.md, Pairing).
    public var isDualMode: Bool
    /// Where the controllers live.
    public var radio: Radio = .btvirt
    /// On RootCanal, the most peripherals one VM serves: a larger fleet spreads over as many VMs as it needs, each
    /// on the same air, with the central in a VM of its own (`LabFleet`). 15 devices took under 300 MiB of a VM's
    /// 512 (docs/lab.md, "A fleet").
    public var devicesPerMachine = 15
    /// On RootCanal, the kernel and BlueZ the peripherals boot in VMs of their own, apart from the central's (nil:
    /// the run's own, and one VM where the fleet fits).
    public var peripheralSystem: LabSystem?
    /// The blemu-cli whose hidden `lab air` runs RootCanal and its relay; needed for `.rootcanal` only.
    public var airLauncher: String?
    /// On RootCanal, where this air takes links from airs on other machines (docs/lab.md, "Airs on several
    /// machines"): a TCP port on the host's network, which carries every packet of the air.
    public var airListen: TCPEndpoint?
    /// On RootCanal, the airs elsewhere this one links to (each listening with `airListen`).
    public var airLinks: [TCPEndpoint] = []
    /// `--ui`: a live view of each peripheral, forwarded to the host (btvirt's one VM only).
    public var liveView: LabLiveView?

    /// A configuration with the docs/lab.md defaults: 2 controllers, KVM only where it works, 512 MiB, 300 s in all,
    /// 60 s per step.
    public init(
        resultsDirectory: String,
        controllers: Int = 2,
        profiles: [String] = [],
        timeout: Duration = .seconds(300),
        stepTimeout: Duration = .seconds(60),
        accelerator: Accelerator = .auto,
        memoryMiB: Int = 512,
        blemuExecutable: String? = nil,
        workingDirectory: String = FileManager.default.currentDirectoryPath,
        cacheDirectory: String = LabConfiguration.defaultCacheDirectory(),
        bluez: BlueZInstall? = nil,
        kernel: LabKernel? = nil,
        isDualMode: Bool = false
    ) {
        self.controllers = controllers
        self.profiles = profiles
        self.resultsDirectory = resultsDirectory
        self.timeout = timeout
        self.stepTimeout = stepTimeout
        self.accelerator = accelerator
        self.memoryMiB = memoryMiB
        self.blemuExecutable = blemuExecutable
        self.workingDirectory = workingDirectory
        self.cacheDirectory = cacheDirectory
        self.bluez = bluez
        self.kernel = kernel
        self.isDualMode = isDualMode
    }

    /// `lab/` in the cache the BlueZ builds and kernels share (`LabCache.root`: `$BLEMU_CACHE`, else
    /// `$XDG_CACHE_HOME/blemu`, else `~/.cache/blemu`), so one variable moves everything the lab keeps.
    public static func defaultCacheDirectory() -> String { LabCache.root() + "/lab" }

    /// `<base>/lab-results/<UTC timestamp>`; the timestamp has no colons, which qemu option values cannot carry.
    public static func defaultResultsDirectory(
        under base: String = FileManager.default.currentDirectoryPath, now: Date = Date()
    ) -> String {
        let since1970 = now.timeIntervalSince1970
        var seconds = time_t(since1970.rounded(.down))
        var utc = tm()
        gmtime_r(&seconds, &utc)
        let milliseconds = Int32((since1970 - since1970.rounded(.down)) * 1000)
        let stamp = String(
            cFormat: "%04d%02d%02dT%02d%02d%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
            utc.tm_min, utc.tm_sec, milliseconds)
        return base + "/lab-results/" + stamp
    }

    /// Creates and returns a results directory of its own under `<base>/lab-results`: the timestamped name, or
    /// that name with `-2`, `-3`... when another run took it in the same millisecond (two lab runs started together
    /// must never share their logs). `mkdir` decides atomically who gets a name. Throws the last error otherwise.
    public static func makeFreshResultsDirectory(
        under base: String = FileManager.default.currentDirectoryPath, now: Date = Date()
    ) throws -> String {
        let name = defaultResultsDirectory(under: base, now: now)
        try FileManager.default.createDirectory(
            atPath: base + "/lab-results", withIntermediateDirectories: true)
        for attempt in 1...100 {
            let candidate = attempt == 1 ? name : "\(name)-\(attempt)"
            if mkdir(candidate, 0o755) == 0 { return candidate }
            guard errno == EEXIST else { break }
        }
        throw LabError.io("cannot make a results directory \(name): \(String(cString: strerror(errno)))")
    }

    /// Removes all but the newest `keep` timestamped results directories under `<base>/lab-results` (names as
    /// `defaultResultsDirectory` makes them, which sort by time), so runs do not pile up in the cache. Other
    /// entries are never touched; a directory that cannot be removed is left. Returns the paths removed.
    @discardableResult
    public static func pruneResults(under base: String, keep: Int) -> [String] {
        let directory = base + "/lab-results"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { name in
                name.count >= 15 && name.prefix(8).allSatisfy(\.isNumber) && name.dropFirst(8).first == "T"
            }
            .sorted()
        return names.dropLast(max(keep, 0)).map { directory + "/" + $0 }.filter {
            (try? FileManager.default.removeItem(atPath: $0)) != nil
        }
    }

    /// Where the VM finds `blemuExecutable`: the same path, or `<results>/bin/blemu` when the path is under /tmp
    /// (the VM mounts a fresh tmpfs there, GuestInit) and outside `sharedCheckout`, where `LabMachine` copies it
    /// before booting.
    public var guestBlemuExecutable: String? {
        guard let blemu = blemuExecutable else { return nil }
        if let checkout = sharedCheckout, blemu.hasPrefix(checkout + "/") { return blemu }
        return Self.isHiddenFromGuest(blemu) ? resultsDirectory + "/bin/blemu" : blemu
    }

    /// The working directory when the VM would not see it (a checkout under /tmp): the VM mounts it read-only at
    /// the same path (`GuestStack`), so the command, its fixtures and a blemu built there run as they would outside
    /// /tmp. Nil when the VM sees it through its root share anyway.
    public var sharedCheckout: String? {
        workingDirectory.hasPrefix("/tmp/") ? workingDirectory : nil
    }

    /// Whether the VM cannot see a host path through its read-only root share: it mounts a tmpfs over each of
    /// `GuestInit.tmpfsMounts`.
    public static func isHiddenFromGuest(_ path: String) -> Bool {
        GuestInit.tmpfsMounts.contains { path == $0 || path.hasPrefix($0 + "/") }
    }

    /// The words of `command` that name a host file the VM cannot see: an existing absolute path under one of
    /// `GuestInit.tmpfsMounts` (not a mount point itself, which the VM has), outside the shared checkout and the
    /// results directory (the VM mounts both). A script in /tmp or /var/tmp is the usual slip: the command then
    /// fails in the VM with "No such file". Only whole words are checked, not an option's `--file=/tmp/x`.
    public func pathsHiddenFromGuest(in command: [String]) -> [String] {
        let shared = [sharedCheckout, resultsDirectory].compactMap { $0 }
        return command.filter { word in
            word.hasPrefix("/") && Self.isHiddenFromGuest(word) && !GuestInit.tmpfsMounts.contains(word)
                && FileManager.default.fileExists(atPath: word)
                && !shared.contains { word == $0 || word.hasPrefix($0 + "/") }
        }
    }

    /// The controllers the peripherals use: one per profile from hci0; without profiles hci0 is left free for the
    /// command to drive as its own peripheral.
    public var peripheralControllers: [String] {
        profiles.isEmpty ? ["hci0"] : profiles.indices.map { "hci\($0)" }
    }

    /// The first controller after the peripherals: the central the command drives.
    public var centralController: String { "hci\(max(profiles.count, 1))" }

    /// The most controllers one btvirt makes: its device table has 16 entries (emulator/btdev.c
    /// `MAX_BTDEV_ENTRIES`, 5.66 and 5.82), and a central reaches only the controllers of its own btvirt.
    public static let maximumControllers = 16

    /// The most controllers one VM takes on RootCanal: each is a serial port, and Debian's kernels register at most
    /// 32 8250 ports (`CONFIG_SERIAL_8250_NR_UARTS`), four of them the legacy ones (the console among them).
    public static let maximumRootCanalControllers = 28

    /// The most controllers this configuration's radio gives one VM.
    public var controllerLimit: Int {
        radio == .btvirt ? Self.maximumControllers : Self.maximumRootCanalControllers
    }

    /// What a path may hold to travel as a qemu option value (commas split it) and a kernel command line word.
    static let wordCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@".unicodeScalars)

    /// The first reason this configuration cannot boot, or nil when it can.
    public func validationProblem() -> String? {
        if controllers < 2 {
            return "--controllers must be at least 2 (a peripheral and a central), got \(controllers)"
        }
        if controllers > controllerLimit && !LabFleet(self).spansMachines {
            return radio == .btvirt
                ? "--controllers must be at most \(Self.maximumControllers), got \(controllers): btvirt holds "
                    + "\(Self.maximumControllers) controllers (emulator/btdev.c MAX_BTDEV_ENTRIES), so a fleet is at "
                    + "most \(Self.maximumControllers - 1) devices and the central per VM (docs/lab.md, \"A fleet\")"
                : "--controllers must be at most \(Self.maximumRootCanalControllers) on RootCanal, got \(controllers): "
                    + "each is one of the guest kernel's 32 serial ports, four of them taken (docs/lab.md, \"The radio\")"
        }
        if radio == .rootcanal && airLauncher == nil { return "--radio rootcanal needs blemu-cli's path" }
        if radio == .btvirt && peripheralSystem != nil {
            return "peripherals on another system need --radio rootcanal: btvirt's air does not leave its VM"
        }
        if radio == .btvirt && (airListen != nil || !airLinks.isEmpty) {
            return "--air-listen and --air-link need --radio rootcanal: btvirt's air does not leave its VM"
        }
        if liveView != nil && radio == .rootcanal {
            // Its VMs live in a network namespace of their own, where a forwarded port is out of the host's reach.
            return "--ui needs the btvirt radio (the default): RootCanal's VMs are in a network namespace of their own"
        }
        if liveView != nil && profiles.isEmpty { return "--ui needs a --profile to show" }
        if !(1...Self.maximumRootCanalControllers).contains(devicesPerMachine) {
            return "--devices-per-vm must be 1...\(Self.maximumRootCanalControllers), got \(devicesPerMachine)"
        }
        if profiles.count + 1 > controllers {
            return "\(profiles.count) profile(s) need \(profiles.count + 1) controllers (one more for the central); "
                + "got --controllers \(controllers)"
        }
        if !profiles.isEmpty && blemuExecutable == nil { return "profiles need the blemu executable's path" }
        if let blemu = blemuExecutable, !blemu.hasPrefix("/") {
            return "the blemu executable \(blemu) must be an absolute path"
        }
        if let tools = bluez?.toolDirectory, Self.isHiddenFromGuest(tools) {
            return "the BlueZ build \(tools) must be outside \(GuestInit.tmpfsMounts.joined(separator: ", ")): "
                + "the VM mounts its own file systems there"
        }
        if let kernel, !kernel.isSystem {
            if Self.isHiddenFromGuest(kernel.modules) {
                return "the kernel's modules \(kernel.modules) must be outside "
                    + "\(GuestInit.tmpfsMounts.joined(separator: ", ")): the VM mounts its own file systems there"
            }
            if kernel.modules.unicodeScalars.contains(where: { !Self.wordCharacters.contains($0) }) {
                return "the kernel's modules \(kernel.modules) may only hold letters, digits and / . _ - + @: the path "
                    + "is a kernel command line word"
            }
        }
        if timeout <= .zero || stepTimeout <= .zero { return "timeouts must be positive" }
        if memoryMiB < 256 { return "the VM needs at least 256 MiB, got \(memoryMiB)" }
        guard resultsDirectory.hasPrefix("/") else { return "the results directory must be absolute" }
        // The path travels as a qemu option value (commas split it) and a kernel command line word (spaces split it).
        let allowed = Self.wordCharacters
        if resultsDirectory.unicodeScalars.contains(where: { !allowed.contains($0) }) {
            return "the results directory \(resultsDirectory) may only hold letters, digits and / . _ - + @"
        }
        if let checkout = sharedCheckout, checkout.unicodeScalars.contains(where: { !allowed.contains($0) }) {
            return "the working directory \(checkout) is under /tmp, so the VM mounts it, and a mounted path may only "
                + "hold letters, digits and / . _ - + @: run from another directory"
        }
        if resultsDirectory == "/" || resultsDirectory.hasPrefix("/proc") || resultsDirectory.hasPrefix("/sys")
            || resultsDirectory.hasPrefix("/dev")
        {
            return "the results directory cannot be \(resultsDirectory): the VM mounts its own file systems there"
        }
        return nil
    }
}
