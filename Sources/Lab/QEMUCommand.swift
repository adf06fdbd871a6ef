/// The argument vector that boots the lab VM: `timeout` around qemu, with the flags docs/lab.md describes.
///
/// Pure: builds strings only. qemu rejects the result at start when a path is unreadable (the kernel, the
/// initramfs) or the accelerator is unavailable; `LabMachine` reports qemu's own message from the console log.
struct QEMUCommand {
    /// The run's configuration: accelerator, memory, the results directory shared read-write, the timeout.
    var configuration: LabConfiguration
    /// `timeout` from coreutils.
    var timeout: String
    /// `qemu-system-x86_64`.
    var qemu: String
    /// The kernel image (`/boot/vmlinuz-<version>`).
    var kernel: String
    /// The kernel's modules directory when it is not the host's own /lib/modules/<release> (`LabKernel`):
    /// `GuestInit` mounts it there.
    var modules: String? = nil
    /// The initramfs archive (`Initramfs.cached`).
    var initramfs: String
    /// The stage 2 script, a file in the work share.
    var script: String
    /// How the VM reaches RootCanal's air, when `configuration.radio` is RootCanal; nil for btvirt (in the VM).
    var air: Air? = nil
    /// The place on the air of this VM's first controller (`LabFleet.Machine.firstController`).
    var firstController = 0
    /// qemu's network for the VM (`ControlBridge`): none unless it is one of a fleet's several VMs.
    var network: [String] = []

    /// What puts the VM on RootCanal's air: `unshare` makes a network namespace for it, and `blemu lab air` in
    /// there runs RootCanal and the relay, then this command's qemu (`RootCanalAir`).
    struct Air {
        /// util-linux's unshare.
        var unshare: String
        /// The blemu-cli whose `lab air` runs the air.
        var launcher: String
        /// The RootCanal executable.
        var rootcanal: String
        /// Whether this process may make a network namespace itself (root); otherwise a user namespace comes first.
        var isPrivileged: Bool
    }

    /// The kernel command line: console on the serial port, reboot (= qemu exits, `-no-reboot`) on panic, and the
    /// init's own words. It cannot carry spaces, hence a script path rather than a command.
    var kernelCommandLine: String {
        [
            "console=ttyS0", "panic=-1", "quiet", "loglevel=4",
            "blemu.work=\(configuration.resultsDirectory)", "blemu.script=\(script)",
        ].joined(separator: " ") + (modules.map { " blemu.modules=\($0)" } ?? "")
            // The controllers' PCI serial ports come after the four legacy ones the 8250 driver reserves, and it
            // registers only as many ports as nr_uarts says (4 by default in Debian's kernels).
            + (air == nil ? "" : " 8250.nr_uarts=\(4 + configuration.controllers)")
    }

    /// The accelerator flags: TCG multi-threaded with a 128 MiB translation cache (docs/lab.md), or KVM.
    var acceleratorArguments: [String] {
        switch configuration.accelerator {
        // `LabMachine` resolves `.auto` before building a command; TCG is the safe reading of it.
        case .tcg, .auto: ["-accel", "tcg,thread=multi,tb-size=128", "-cpu", "max"]
        case .kvm: ["-accel", "kvm", "-cpu", "host"]
        }
    }

    /// `timeout --foreground --kill-after=10 SECONDS qemu ...`: TERM at the deadline and KILL 10 s later, so a
    /// wedged qemu never outlives its run. `--foreground` keeps qemu in the caller's process group, so a Ctrl-C
    /// that stops `blemu lab run` stops the VM too.
    var arguments: [String] {
        air == nil ? machine : machine + serialControllers
    }

    /// The command that runs `plan`'s VMs on RootCanal's air: unshare into a new network namespace (a user
    /// namespace first when not root), then `blemu lab air` (`RootCanalAir`).
    static func airLaunch(_ air: Air, plan: String) -> [String] {
        [air.unshare] + (air.isPrivileged ? ["--net"] : ["--map-root-user", "--net"])
            + ["--", air.launcher, "lab", "air", "--rootcanal", air.rootcanal, "--plan", plan]
    }

    /// Controller i as a PCI serial port (ttyS4 and up in the guest, in PCI order) on the relay's port for its place
    /// on the air, which qemu connects to as the VM starts. PCI, not ISA: qemu has only three ISA ports besides the
    /// console.
    var serialControllers: [String] {
        (0..<configuration.controllers).flatMap { index in
            [
                "-chardev",
                "socket,id=radio\(index),host=127.0.0.1,port=\(Int(RootCanalAir.relayPort) + firstController + index),"
                    + "nodelay=on",
                "-device", "pci-serial,chardev=radio\(index)",
            ]
        }
    }

    /// qemu under `timeout`, without the air.
    var machine: [String] {
        // Appended in steps: Swift 6.2's type checker gives up on one long `+` chain of array literals
        // (docs/packaging.md, "Two compilers").
        let seconds = max(1, configuration.timeout.components.seconds)
        var arguments = [timeout, "--foreground", "--kill-after=10", "\(seconds)", qemu]
        arguments += acceleratorArguments
        arguments += ["-m", "\(configuration.memoryMiB)", "-nographic", "-nodefaults", "-no-reboot"]
        arguments += network.isEmpty ? ["-nic", "none"] : network
        arguments += ["-serial", "stdio", "-kernel", kernel, "-initrd", initramfs, "-append", kernelCommandLine]
        arguments += [
            "-fsdev", "local,id=root,path=/,readonly=on,security_model=none,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=root,mount_tag=\(GuestInit.rootTag)",
            "-fsdev", "local,id=work,path=\(configuration.resultsDirectory),security_model=none,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=work,mount_tag=\(GuestInit.workTag)",
        ]
        if let checkout = configuration.sharedCheckout {
            arguments += [
                "-fsdev", "local,id=checkout,path=\(checkout),readonly=on,security_model=none,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=checkout,mount_tag=\(GuestInit.checkoutTag)",
            ]
        }
        return arguments
    }
}
