/// The second stage inside the VM (/bin/sh as PID 1 on the host's root): brings up the BlueZ stack step by step,
/// starts the peripherals, runs the command, writes its exit code to the work share and powers off.
///
/// Two files in the work share: `functions`, the same for every run (guest-functions.sh, a shell file of its own
/// that CI's shell linter checks), and `script`, this run's: its settings, then the steps that differ by run (the
/// peripherals, the command, a fleet's parts) around the functions' `bring_up_stack`. Every wait is a bounded poll.
/// A step that fails or times out writes `lab-failure` (the step's name, then the reason) to the work share and
/// powers off; `LabMachine` turns that into `LabError.stepFailed` with the log tails. Progress goes to `steps` (one
/// `<uptime> <step>` line each), which the host follows live.
struct GuestStack {
    /// The stack's shell functions (Sources/Lab/guest-functions.sh, embedded in the binary at build time): written
    /// beside `script`, which sources it.
    static let functions = String(decoding: PackageResources.guest_functions_sh, as: UTF8.self)

    /// The run's configuration (controllers, profiles, paths, step timeout).
    var configuration: LabConfiguration
    /// The command and its arguments, run in `configuration.workingDirectory`.
    var command: [String]
    /// The BlueZ to boot: its bluetoothd, and its tools ahead of the system's on PATH.
    var bluez: BlueZInstall
    /// The btvirt that makes the controllers: the lab's radio (`BlueZInstall.labRadio`), else the build's or the
    /// system's.
    var radio: String
    /// Static busybox on the host's root, for `poweroff -f` (the host's own poweroff talks to systemd).
    var busybox: String
    /// The peripherals, one per controller from hci0, in order.
    var profileCopies: [Peripheral]
    /// What this VM does in its run.
    var role: Role = .whole

    /// A fleet VM as the command's VM finds it.
    struct FleetMachine: Sendable, Equatable {
        /// Its results directory, `<results>/vmN`, inside this VM's work share.
        var directory: String
        /// Its first controller's place on the air (`LabFleet.Machine.firstController`), which its bridge's ports
        /// follow (`ControlBridge.airPort`).
        var firstController: Int
    }

    /// What a VM does in its run (`LabFleet`).
    enum Role: Sendable, Equatable {
        /// Everything: the peripherals, the central and the command, in one VM.
        case whole
        /// The command's VM of a fleet over several VMs: hci0 is the central; the peripherals are served by the VMs
        /// listed.
        case central(fleet: [FleetMachine])
        /// A fleet's VM: serves its profiles, says so (`File.serving`), and powers off once `File.stop` appears.
        case peripherals
    }

    /// A peripheral as the stack starts it: its profile's copy in the work share, and what `blemu run` adds to
    /// its name (a fleet's copies, `ProfileCopies`).
    struct Peripheral: Sendable, Equatable {
        var profile: String
        var nameSuffix: String?
    }

    /// Names of the files the stack writes in the work share; the host reads them.
    enum File {
        static let steps = "steps"
        static let failure = "lab-failure"
        static let exitCode = "vm-rc"
        static let controllers = "controllers"
        static let command = "command.log"
        static let bluetoothd = "bluetoothd.log"
        static let btmon = "btmon.txt"
        /// btmon's binary capture: whole even where 5.66's text decoder crashes (`btmon -w`; read by BTSnoop).
        static let btsnoop = "btmon.snoop"
        /// `bluetoothd --version` of the BlueZ that booted.
        static let bluezVersion = "bluez-version"
        /// `uname -r` in the VM: the kernel that booted.
        static let kernelRelease = "kernel-release"
        /// gdb's backtrace of a bluetoothd that crashed (the VM keeps its core in /run; gdb from the host's root).
        static let bluetoothdBacktrace = "bluetoothd-backtrace.txt"
        /// One line per process that dumped core in the VM: `core.NAME.PID`.
        static let cores = "cores"
        static let dbus = "dbus-daemon.log"
        static let btvirt = "btvirt.log"
        /// btattach's output, one per RootCanal controller (`LabConfiguration.Radio.rootcanal`).
        static let btattach = "btattach.log"
        /// `blemu lab bridge`'s log, in a fleet's VMs (`ControlBridge`).
        static let bridge = "bridge.log"
        static let mainConf = "main.conf"
        /// A fleet VM's mark that every peripheral of it advertises.
        static let serving = "serving"
        /// Written into a fleet VM's results directory when the run is over (`RootCanalAir`): it powers off.
        static let stop = "stop"
        /// Written by `RootCanalAir` into a VM's results directory when its qemu exits: its status.
        static let machineExit = "vm-exit"
        /// The central's VM's list of fleet VMs that never served, one line each with the reason.
        static let fleetFailures = "fleet-failures"
        static let script = "guest-stack.sh"
        /// `GuestStack.functions`, which `script` sources.
        static let functions = "guest-functions.sh"
        static func peripheral(_ controller: String) -> String { "blemu-\(controller).log" }
        /// The peak resident set, in KiB, of the peripheral on `controller`, read as the run ends.
        static func peakMemory(_ controller: String) -> String { "peak-rss-\(controller)" }
        /// What the live view (`blemu ui`, `LabLiveView`) of the peripheral on `controller` printed.
        static func liveView(_ controller: String) -> String { "ui-\(controller).log" }
        /// The event log (`blemu run --events`) of the peripheral on `controller`.
        static func events(_ controller: String) -> String { "events-\(controller).jsonl" }
    }

    /// The control socket (`blemu run --control`) of the peripheral on `controller`, inside the VM. In the VM's own
    /// /run rather than the results directory, whose path can be longer than the 107 bytes `sockaddr_un` holds.
    static func controlSocket(_ controller: String) -> String { "/run/blemu/\(controller).sock" }

    /// bluetoothd's configuration: one ATT channel (no EATT reordering of notifications: docs/bluez.md), and no
    /// Device Information service of its own (`DeviceID = false`).
    static let mainConf = """
        # Generated by blemu lab for bluetoothd -f.
        [General]
        # No Device Information of bluetoothd's own (src/gatt-database.c populate_devinfo_service, PnP ID): a
        # profile's 0x180A is the only one a central sees.
        DeviceID = false

        [GATT]
        Channels = 1

        """

    /// The main.conf for `radio`: `mainConf`, and on RootCanal an LE-only controller mode unless `dualMode`, and a
    /// 100 ms advertising interval.
    ///
    /// RootCanal's controllers do BR/EDR as well as LE, and `ControllerMode = le` turns BR/EDR off in the host, as
    /// btvirt's `-L` does in the controller: after an LE pairing a 5.66 peripheral paged the central over BR/EDR,
    /// and its bluetoothd exited on the Page Timeout (its log ends in `device_bonding_failed`, then
    /// `resume_discovery`). RootCanal keeps to the advertising interval in real time, and with the kernel's default
    /// (1.28 s) a central took 3.5 s to connect instead of 0.74 s (btvirt delivers every advertisement at once).
    static func mainConf(for radio: LabConfiguration.Radio, dualMode: Bool = false) -> String {
        guard radio == .rootcanal else { return mainConf }
        let general = dualMode ? "" : "ControllerMode = le\n"
        return mainConf.replacing("DeviceID = false\n", with: "DeviceID = false\n" + general)
            + """

            [LE]
            MinAdvertisementInterval = 0x00a0
            MaxAdvertisementInterval = 0x00a0

            """
    }

    /// `text` quoted for sh: inside single quotes nothing is special except the quote itself.
    static func shellQuote(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }

    /// Shows a working directory under /tmp (which the VM's own tmpfs hides) read-only at its path. When the
    /// results directory lies inside it, the work share is kept aside by a bind mount and bound back on top: a 9p
    /// device mounts only once ("no channels available").
    var checkoutMount: String {
        guard let checkout = configuration.sharedCheckout else { return "" }
        let work = Self.shellQuote(configuration.resultsDirectory)
        let quoted = Self.shellQuote(checkout)
        return """
            step checkout
            case \(work) in \(quoted)/*) inside=1 ;; *) inside= ;; esac
            if [ -n "$inside" ]; then mkdir -p /run/blemu-lab/work && mount --bind \(work) /run/blemu-lab/work; fi
            mkdir -p \(quoted)
            mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose \(GuestInit.checkoutTag) \(quoted) \\
                || die "mounting the working directory \(checkout) failed"
            if [ -n "$inside" ]; then
                mount --bind /run/blemu-lab/work \(work) || die "binding the results directory back failed"
            fi

            """
    }

    /// Where the writable view of the working directory keeps COMMAND's writes in the VM (tmpfs), and where they
    /// are copied when it ends.
    static let writesUpper = "/run/blemu-lab/cwd-upper"
    /// Results subdirectory that receives a copy of what COMMAND wrote in its working directory.
    static let workdirCopy = "workdir"

    /// Gives COMMAND a writable view of its working directory: an overlay whose upper layer is the VM's memory, so
    /// pytest's cache, a JUnit file by relative path or `__pycache__` work, and the user's checkout is never
    /// changed; `copyWrites` saves them into the results. A results directory inside the working directory is bound
    /// back on top, as `checkoutMount` does. A path the overlay's options cannot carry (a comma, a colon, a space)
    /// stays read-only, with a line in the log.
    var writableWorkingDirectory: String {
        let directory = configuration.workingDirectory
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@")
        guard directory != "/", directory.hasPrefix("/"), directory.allSatisfy(safe.contains) else {
            return "echo \"the working directory stays read-only: the overlay cannot mount at its path\" >&2\n"
        }
        let quoted = Self.shellQuote(directory)
        let work = Self.shellQuote(configuration.resultsDirectory)
        return """
            step workdir
            case \(work) in \(quoted)/*) inside=1 ;; *) inside= ;; esac
            modprobe overlay || die "loading the overlay module failed"
            mkdir -p \(Self.writesUpper) /run/blemu-lab/cwd-work
            if [ -n "$inside" ]; then mkdir -p /run/blemu-lab/results && mount --bind \(work) /run/blemu-lab/results; fi
            mount -t overlay overlay \
                -o lowerdir=\(quoted),upperdir=\(Self.writesUpper),workdir=/run/blemu-lab/cwd-work \(quoted) \
                || die "mounting a writable view of \(directory) failed"
            if [ -n "$inside" ]; then
                mount --bind /run/blemu-lab/results \(work) || die "binding the results directory back failed"
            fi

            """
    }

    /// Copies what COMMAND wrote in its working directory into the results: files, links and directories (the
    /// overlay's deletion marks are devices, which the share refuses; cp goes on past them).
    var copyWrites: String {
        """
        if [ -d \(Self.writesUpper) ] && [ -n "$(ls -A \(Self.writesUpper))" ]; then
            mkdir -p "$W/\(Self.workdirCopy)"
            cp -R --preserve=mode,timestamps,links \(Self.writesUpper)/. "$W/\(Self.workdirCopy)/" 2>/dev/null
        fi
        """
    }

    /// Asks each peripheral for its counters once COMMAND has ended (`LabSummary` reads them).
    var collectCounters: String {
        guard !profileCopies.isEmpty else { return "" }
        // Each peripheral's peak resident set too (VmHWM, proc(5)), by its pid in start order: what a device costs.
        return "set -- $peripheral_pids\n"
            + configuration.peripheralControllers.map { controller in
                "\(blemu) ctl \(Self.controlSocket(controller)) counters >\"$W/counters-\(controller).json\" 2>/dev/null\n"
                    + "sed -n 's/^VmHWM:[[:space:]]*\\([0-9]*\\) kB/\\1/p' \"/proc/$1/status\" "
                    + ">\"$W/\(File.peakMemory(controller))\" 2>/dev/null; shift"
            }.joined(separator: "\n")
    }

    /// The command's part of the script: its environment, a wait for the fleet's VMs when there are any, the
    /// command, its writes and the peripherals' counters.
    private func commandSection(peripherals: [String], central: String) -> String {
        let commandLine = command.map(Self.shellQuote).joined(separator: " ")
        let controls = peripherals.map(Self.controlSocket).joined(separator: ",")
        let events = peripherals.map { "$W/" + File.events($0) }.joined(separator: ",")
        return """
            export BLEMU_LAB=1
            export BLEMU_LAB_BLUEZ_VERSION=\(Self.shellQuote(bluez.version))
            \(configuration.guestBlemuExecutable.map { "export BLEMU_LAB_BLEMU=" + Self.shellQuote($0) } ?? "")
            export BLEMU_LAB_RESULTS="$W"
            export BLEMU_LAB_PERIPHERAL=\(peripherals.joined(separator: ","))
            BLEMU_LAB_PERIPHERAL_ADDRESS="$(addresses \(peripherals.joined(separator: " ")))"
            export BLEMU_LAB_PERIPHERAL_ADDRESS
            export BLEMU_LAB_CENTRAL=\(central)
            BLEMU_LAB_CENTRAL_ADDRESS="$(addresses \(central))"
            export BLEMU_LAB_CENTRAL_ADDRESS
            \(profileCopies.isEmpty ? "" : """
            export BLEMU_LAB_CONTROL=\(Self.controlSocket(peripherals[0])) BLEMU_LAB_CONTROLS=\(controls)
            export BLEMU_LAB_EVENTS="$W/\(File.events(peripherals[0]))" BLEMU_LAB_EVENT_LOGS="\(events)"
            """)
            \(fleetWait)
            \(writableWorkingDirectory)
            step command
            (
                cd \(Self.shellQuote(configuration.workingDirectory)) 2>/dev/null || cd "$W" || exit 1
                exec \(commandLine)
            ) </dev/null >"$W/\(File.command)" 2>&1
            rc=$?
            \(copyWrites)
            \(collectCounters)
            echo "$rc" > "$W/\(File.exitCode)"
            step power-off
            power_off
            """
    }

    /// The live views of the peripherals of a VM that serves them and runs the command (`LabLiveView`); empty
    /// without `--ui`.
    private func liveViews(peripherals: [String]) -> String {
        guard let view = configuration.liveView, role == .whole, !profileCopies.isEmpty else { return "" }
        return view.guestStart(blemu: blemu, controllers: peripherals) { "$W/" + File.events($0) }
    }

    /// The blemu the VM runs, quoted for the shell.
    private var blemu: String { Self.shellQuote(configuration.guestBlemuExecutable ?? "blemu") }

    /// A fleet VM's end: it takes connections for its peripherals' control sockets (`ControlBridge`), says it
    /// serves, waits for the run to end, and leaves its peripherals' counters.
    private var servingUntilStopped: String {
        let joins = configuration.peripheralControllers.enumerated().map { index, controller in
            " --join tcp:\(ControlBridge.guestAddress):\(ControlBridge.guestPort(controller: index))="
                + "unix:\(Self.controlSocket(controller))"
        }
        return """
            step bridge
            bring_up_network \(ControlBridge.guestAddress)
            \(blemu) lab bridge\(joins.joined()) 2>"$W/\(File.bridge)" &
            step serving
            : > "$W/\(File.serving)"
            until [ -e "$W/\(File.stop)" ]; do sleep 0.2; done
            step stop
            \(collectCounters)
            echo 0 > "$W/\(File.exitCode)"
            step power-off
            power_off
            """
    }

    /// In the central's VM of a fleet, before the command: waits until each fleet VM serves or has failed (its
    /// `lab-failure`, or its qemu gone), lists the failed ones in `File.fleetFailures` (the others go on), then sets
    /// the peripherals' environment from the serving VMs' `controllers` files: names as `vmN/hciM`, addresses, and
    /// event logs (in this VM's work share), and control sockets: this VM's own, each joined to its VM's by a
    /// bridge (`ControlBridge`), ready before the command starts.
    private var fleetWait: String {
        guard case .central(let fleet) = role else { return "" }
        let directories = fleet.map { Self.shellQuote($0.directory) }.joined(separator: " ")
        let places = fleet.map { "\(Self.shellQuote($0.directory)):\($0.firstController)" }.joined(separator: " ")
        return """
            step fleet
            for vm in \(directories); do
                until [ -e "$vm/\(File.serving)" ]; do
                    if [ -e "$vm/\(File.failure)" ] || [ -e "$vm/\(File.machineExit)" ]; then
                        reason=$(tr '\\n' ' ' < "$vm/\(File.failure)" 2>/dev/null)
                        echo "${vm##*/}: ${reason:-its VM exited with status $(cat "$vm/\(File.machineExit)")}" \\
                            >> "$W/\(File.fleetFailures)"
                        break
                    fi
                    sleep 0.2
                done
            done
            fleet_names='' fleet_addresses='' fleet_events='' fleet_controls='' joins=''
            for entry in \(places); do
                vm=${entry%:*} first=${entry##*:}
                [ -e "$vm/\(File.serving)" ] || continue
                mkdir -p "/run/blemu/${vm##*/}"
                while read -r controller address; do
                    fleet_names="$fleet_names${fleet_names:+,}${vm##*/}/$controller"
                    fleet_addresses="$fleet_addresses${fleet_addresses:+,}$address"
                    fleet_events="$fleet_events${fleet_events:+,}$vm/events-$controller.jsonl"
                    # This VM's socket for the peripheral, joined to its VM's control socket (ControlBridge).
                    control="/run/blemu/${vm##*/}/$controller.sock"
                    fleet_controls="$fleet_controls${fleet_controls:+,}$control"
                    port=$(( \(ControlBridge.airPortBase) + first + ${controller#hci} ))
                    joins="$joins --join unix:$control=tcp:\(ControlBridge.hostAddress):$port"
                done < "$vm/\(File.controllers)"
            done
            export BLEMU_LAB_PERIPHERAL="$fleet_names" BLEMU_LAB_PERIPHERAL_ADDRESS="$fleet_addresses"
            export BLEMU_LAB_EVENTS="${fleet_events%%,*}" BLEMU_LAB_EVENT_LOGS="$fleet_events"
            export BLEMU_LAB_CONTROL="${fleet_controls%%,*}" BLEMU_LAB_CONTROLS="$fleet_controls"
            if [ -n "$joins" ]; then
                step bridge
                bring_up_network \(ControlBridge.guestAddress)
                \(blemu) lab bridge $joins 2>"$W/\(File.bridge)" &
                for control in $(echo "$fleet_controls" | tr , ' '); do
                    wait_for "the bridge's socket $control" test -S "$control"
                done
            fi
            """
    }

    /// The script text.
    var script: String {
        let work = Self.shellQuote(configuration.resultsDirectory)
        let stepSeconds = max(1, configuration.stepTimeout.components.seconds)
        let count = configuration.controllers
        let isCentral = if case .central = role { true } else { false }
        let peripherals = isCentral ? [] : configuration.peripheralControllers
        let central = isCentral ? "hci0" : configuration.centralController
        var startPeripherals = ""
        for (index, peripheral) in profileCopies.enumerated() {
            let controller = "hci\(index)"
            let suffix = peripheral.nameSuffix.map { " --name-suffix " + Self.shellQuote($0) } ?? ""
            startPeripherals += """
                step peripheral-\(controller)
                \(blemu) run --adapter \(controller) --bus system --control \(Self.controlSocket(controller))\(suffix) \\
                    --events "$W/\(File.events(controller))" \(Self.shellQuote(peripheral.profile)) \\
                    </dev/null >"$W/\(File.peripheral(controller))" 2>&1 &
                pid=$!; peripheral_pids="$peripheral_pids $pid"
                wait_for "blemu run on \(controller) to register an advertisement (see \(File.peripheral(controller)))" \\
                    advertising_alive \(controller) $pid

                """
        }
        // The BlueZ build's tools (btvirt, btmon, btmgmt, bluetoothctl, gatttool) shadow the system's, so a central
        // the command runs talks the same BlueZ as the daemon; a blemu copied into the work share comes next.
        var path = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        if let blemu = configuration.guestBlemuExecutable, blemu != configuration.blemuExecutable {
            path.insert(String(blemu.prefix(upTo: blemu.lastIndex(of: "/") ?? blemu.endIndex)), at: 0)
        }
        if let tools = bluez.toolDirectory { path.insert(tools, at: 0) }
        // The radio: RootCanal's controllers are serial ports (guest-functions.sh, `bring_up_rootcanal`); btvirt is a
        // program, -L making LE-only controllers (docs/bluez.md, Pairing: BR/EDR paging during pairing crashes the
        // kernel).
        let radioSettings =
            configuration.radio == .rootcanal
            ? "RADIO_KIND=rootcanal"
            : "RADIO_KIND=btvirt RADIO=\(Self.shellQuote(radio)) "
                + "RADIO_ARGUMENTS='\(configuration.isDualMode ? "-l\(count)" : "-L -l\(count)")'"
        return """
            #!/bin/sh
            # blemu lab, stage 2 (PID 1 on the host's root). Generated by the Lab module (GuestStack.swift); the
            # functions it calls are in \(File.functions).
            W=\(work)
            STEP_SECONDS=\(stepSeconds) CONTROLLERS=\(count)
            \(radioSettings)
            BLUETOOTHD=\(Self.shellQuote(bluez.bluetoothd))
            BUSYBOX=\(Self.shellQuote(busybox))
            export PATH=\(Self.shellQuote(path.joined(separator: ":")))
            export HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
            # bleak's default adapter is the central's controller (BleakDefaultAdapter.swift).
            export PYTHONPATH="$W/\(BleakDefaultAdapter.directory)${PYTHONPATH:+:$PYTHONPATH}"
            echo blemu-lab > /proc/sys/kernel/hostname
            # A `.` that fails ends a non-interactive dash, and this is PID 1: say why and power off instead.
            if [ ! -r "$W/\(File.functions)" ]; then
                printf 'start\\n%s\\n' "$W/\(File.functions) is missing" > "$W/\(File.failure)"
                "$BUSYBOX" poweroff -f
            fi
            . "$W/\(File.functions)"

            \(checkoutMount)
            bring_up_stack

            mkdir -p /run/blemu
            \(startPeripherals)
            \(liveViews(peripherals: peripherals))
            \(role == .peripherals ? servingUntilStopped : commandSection(peripherals: peripherals, central: central))
            step power-off
            power_off

            """
    }
}
