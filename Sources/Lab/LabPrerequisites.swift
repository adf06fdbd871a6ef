import FoundationEssentials
import LocalIO

/// What this machine has of the lab's rig (docs/lab.md): qemu, a kernel with its modules, static busybox, BlueZ.
///
/// Checking only reads the file system; it never fails, it reports. `isSatisfied` is false when anything required is
/// missing, and `missingPackages` says what to `apt-get install`.
public struct LabPrerequisites: Sendable {
    /// One thing the lab needs, where it was found, and the Debian package that provides it.
    public struct Item: Sendable, Equatable {
        /// What it is, for people: "qemu-system-x86_64", "kernel modules for 6.1.0-56-amd64".
        public let name: String
        /// Where it was found; nil when missing.
        public let path: String?
        /// The Debian package that provides it; empty for what a script of this project builds.
        public let package: String
        /// False for things only some scenarios need (python3-dbus for the tests' central).
        public let isRequired: Bool
        /// Why it is missing or unusable, when it is.
        public let problem: String?
        /// What works but is not as the lab expects it now (a radio built before the newest patch), when so.
        public let warning: String?

        /// An item from its parts; `warning` only for one that is present.
        init(
            name: String, path: String?, package: String, isRequired: Bool, problem: String?, warning: String? = nil
        ) {
            self.name = name
            self.path = path
            self.package = package
            self.isRequired = isRequired
            self.problem = problem
            self.warning = warning
        }

        /// True when it was found and is usable.
        public var isPresent: Bool { path != nil && problem == nil }
    }

    /// The kernel the VM boots, whose modules go into the initramfs; nil when none is there.
    public let kernel: LabKernel?
    /// The release of the kernel the VM boots ("6.1.0-41-amd64").
    public var kernelVersion: String? { kernel?.release }
    /// Every checked item, required or not.
    public let items: [Item]

    /// True when every required item is present.
    public var isSatisfied: Bool { items.allSatisfy { $0.isPresent || !$0.isRequired } }
    /// True when the optional items (the tests' python central) are present too.
    public var isComplete: Bool { items.allSatisfy(\.isPresent) }
    /// Debian packages to install for the missing items, required and optional, without duplicates, in order.
    public var missingPackages: [String] {
        var seen: Set<String> = []
        return items.filter { !$0.isPresent && !$0.package.isEmpty }.map(\.package).filter { seen.insert($0).inserted }
    }

    /// The path of a present item by name; nil when it is missing.
    func path(of name: String) -> String? { items.first { $0.name == name && $0.isPresent }?.path }

    /// Checks this machine (or a tree rooted at `root`, for tests); never throws.
    /// With `bluez`, bluetoothd and its tools are looked for in that build's directory first; with `kernel`, that
    /// kernel is checked instead of the system's newest.
    /// With `radio` `.rootcanal`, RootCanal and unshare are required too.
    public static func check(
        root: String = "", bluez: BlueZInstall? = nil, kernel chosen: LabKernel? = nil,
        radio: LabConfiguration.Radio = .btvirt
    ) -> LabPrerequisites {
        let files = FileManager.default
        func executable(_ name: String, _ candidates: [String], package: String, required: Bool = true) -> Item {
            let found = candidates.map { root + $0 }.first { files.isExecutableFile(atPath: $0) }
            return Item(
                name: name, path: found, package: package, isRequired: required,
                problem: found == nil ? "not found at \(candidates.joined(separator: " or "))" : nil)
        }

        var items: [Item] = []
        items.append(executable("qemu-system-x86_64", ["/usr/bin/qemu-system-x86_64"], package: "qemu-system-x86"))
        items.append(executable("timeout", ["/usr/bin/timeout", "/bin/timeout"], package: "coreutils"))

        // The VM runs the host's userland, so modprobe inside it must find /lib/modules/<release>: the system's
        // newest kernel with its modules, or a kernel unpacked by scripts/fetch-kernel (mounted there in the VM).
        let kernel = chosen ?? LabKernel.system(root: root)
        let kernelProblem: String? =
            if let kernel {
                // Ubuntu ships kernels readable by root only; qemu run by a user cannot load them.
                files.isReadableFile(atPath: kernel.image) ? nil : "\(kernel.image) is not readable"
            } else {
                "no /boot/vmlinuz-* with matching /lib/modules"
            }
        items.append(
            Item(
                name: "kernel", path: kernel?.image, package: "linux-image-amd64", isRequired: true,
                problem: kernelProblem))
        if let kernel {
            var problems: [String] = []
            do { _ = try kernel.initramfsModules() } catch { problems.append(error.description) }
            let vhci = ["ko", "ko.xz", "ko.zst"].contains {
                files.fileExists(atPath: "\(kernel.modules)/kernel/drivers/bluetooth/hci_vhci.\($0)")
            }
            if !vhci { problems.append("no hci_vhci module (the virtual controllers' driver)") }
            items.append(
                Item(
                    name: "kernel modules", path: kernel.modules, package: "linux-image-amd64", isRequired: true,
                    problem: problems.isEmpty ? nil : problems.joined(separator: "; ")))
        }

        var busybox = executable("busybox (static)", ["/bin/busybox", "/usr/bin/busybox"], package: "busybox-static")
        if let path = busybox.path, !isStaticELF(path) {
            busybox = Item(
                name: busybox.name, path: path, package: busybox.package, isRequired: true,
                problem: "\(path) is dynamically linked: the initramfs has no libc")
        }
        items.append(busybox)
        items.append(executable("kmod", ["/usr/sbin/modprobe", "/sbin/modprobe"], package: "kmod"))
        items.append(executable("dbus-daemon", ["/usr/bin/dbus-daemon"], package: "dbus-daemon"))
        items.append(executable("dbus-send", ["/usr/bin/dbus-send"], package: "dbus-bin"))
        // A build from scripts/build-bluez holds bluetoothd and its tools in one directory, ahead of the system's.
        let build = bluez?.toolDirectory.map { [$0 + "/"] } ?? []
        items.append(
            executable(
                "bluetoothd",
                build.map { $0 + "bluetoothd" } + ["/usr/libexec/bluetooth/bluetoothd", "/usr/sbin/bluetoothd"],
                package: "bluez"))
        items.append(executable("btmgmt", ["/usr/bin/btmgmt"], package: "bluez"))
        items.append(executable("btmon", build.map { $0 + "btmon" } + ["/usr/bin/btmon"], package: "bluez"))
        items.append(
            executable("btvirt", build.map { $0 + "btvirt" } + ["/usr/bin/btvirt"], package: "bluez-test-tools"))
        // The radio the lab runs: a btvirt whose feature exchange takes link time (BlueZInstall.labRadio).
        // Without it centrals that wait for `Connected` (bleak) are dropped, so the lab tests need it.
        items.append(radioItem(root.isEmpty ? BlueZInstall.labRadio(for: bluez) : nil))
        items.append(
            rootcanalItem(
                root.isEmpty ? RootCanalInstall.find() : nil, required: radio == .rootcanal))
        items.append(
            executable(
                "unshare", ["/usr/bin/unshare", "/bin/unshare"], package: "util-linux", required: radio == .rootcanal))
        items.append(executable("python3", ["/usr/bin/python3"], package: "python3", required: false))
        let pythonDBus = root + "/usr/lib/python3/dist-packages/dbus"
        items.append(
            Item(
                name: "python3-dbus", path: files.fileExists(atPath: pythonDBus) ? pythonDBus : nil,
                package: "python3-dbus", isRequired: false,
                problem: files.fileExists(atPath: pythonDBus) ? nil : "\(pythonDBus) not found"))
        // The tests' stand-in peripheral runs a GLib main loop to serve its advertisement object.
        let pythonGI = root + "/usr/lib/python3/dist-packages/gi"
        items.append(
            Item(
                name: "python3-gi", path: files.fileExists(atPath: pythonGI) ? pythonGI : nil,
                package: "python3-gi", isRequired: false,
                problem: files.fileExists(atPath: pythonGI) ? nil : "\(pythonGI) not found"))
        return LabPrerequisites(kernel: kernel, items: items)
    }

    /// True when the ELF file at `path` has no program interpreter (PT_INTERP), so it runs without a libc on disk.
    static func isStaticELF(_ path: String) -> Bool {
        guard let header = try? LocalFile.bytes(atPath: path, from: 0, upTo: 64).bytes, header.count == 64,
            header.starts(with: [0x7F, 0x45, 0x4C, 0x46]), header[4] == 2  // 64-bit ELF
        else { return false }
        func integer(_ data: [UInt8], _ offset: Int, _ size: Int) -> Int {
            (0..<size).reduce(0) { $0 | Int(data[offset + $1]) << (8 * $1) }  // little endian
        }
        let tableOffset = integer(header, 0x20, 8)
        let entrySize = integer(header, 0x36, 2)
        let count = integer(header, 0x38, 2)
        guard entrySize >= 4, count < 256,
            let table = try? LocalFile.bytes(atPath: path, from: tableOffset, upTo: entrySize * count).bytes,
            table.count == entrySize * count
        else { return false }
        let interpreter = 3  // PT_INTERP
        return !(0..<count).contains { integer(table, $0 * entrySize, 4) == interpreter }
    }

    /// The lab's radio (`BlueZInstall.labRadio`), nil when no build has one. A radio built before one of today's
    /// patches still works, with the old behaviour that patch removed: a warning, not a problem.
    static func radioItem(_ radio: String?, cacheRoots: [String] = BlueZInstall.cacheRoots()) -> Item {
        let missing = radio.map(BlueZInstall.missingRadioPatches(of:)) ?? []
        // A build's radio is VERSION/bin/btvirt.
        let version = radio.flatMap { $0.split(separator: "/").dropLast(2).last }
        return Item(
            name: "btvirt with the lab's link timing", path: radio, package: "", isRequired: false,
            problem: radio == nil
                ? "no build in \(cacheRoots.joined(separator: " or ")) has a patched btvirt "
                    + "(run scripts/build-bluez 5.82, or install blemu-lab)"
                : nil,
            warning: missing.isEmpty
                ? nil
                : "built without \(missing.joined(separator: ", ")) (docs/lab.md, \"The radio\"): run "
                    + "scripts/build-bluez \(version ?? "VERSION") again, or install a newer blemu-lab")
    }

    /// RootCanal for `--radio rootcanal` (`RootCanalInstall`): present only at the version the lab runs.
    static func rootcanalItem(_ install: RootCanalInstall?, required: Bool) -> Item {
        let problem: String? =
            if let install {
                install.installedVersion == RootCanalInstall.version
                    ? RootCanalInstall.glibcProblem()
                    : "rootcanal \(install.installedVersion) at \(install.executable): the lab runs "
                        + "\(RootCanalInstall.version); install it with \(RootCanalInstall.installCommand())"
            } else {
                "not in the lab's venv; install it with \(RootCanalInstall.installCommand())"
            }
        return Item(
            name: "rootcanal \(RootCanalInstall.version)", path: install?.executable, package: "", isRequired: required,
            problem: problem)
    }

    /// A report for people: one line per item, then the `apt-get install` line when something is missing.
    public var report: String {
        var lines = items.map { item in
            let mark =
                switch (item.isPresent, item.isRequired, item.warning) {
                case (false, true, _): "MISSING"
                case (false, false, _): "absent "
                case (true, _, nil): "ok     "
                case (true, _, _): "warning"
                }
            let detail = item.problem ?? [item.path, item.warning].compactMap { $0 }.joined(separator: ": ")
            return "\(mark) \(item.name): \(detail)"
        }
        if !missingPackages.isEmpty {
            lines.append(
                "install with: sudo apt-get install --no-install-recommends \(missingPackages.joined(separator: " "))")
        }
        return lines.joined(separator: "\n")
    }
}
