import Foundation
import Testing

@testable import Lab

/// What the lab generates (initramfs, init scripts, qemu arguments), checked without booting anything.
struct LabGenerationTests {
    private let configuration = LabConfiguration(
        resultsDirectory: "/work/results/r1", controllers: 3, profiles: ["/p/a.yaml", "/p/b.yaml"],
        blemuExecutable: "/opt/blemu/bin/blemu", workingDirectory: "/work/checkout")

    @Test func theInitramfsInitLoadsTheModulesInTheArchivesOrderAndMountsACachedKernelsModules() {
        let script = GuestInit.script
        #expect(script.contains("for m in $(cat /modules/order); do"))
        #expect(script.contains("blemu.modules=*) modules=\"${word#blemu.modules=}\" ;;"))
        #expect(script.contains("mount -o bind \"/newroot$modules\" \"/newroot/lib/modules/$release\""))
        #expect(
            script.contains(
                "mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose /dev/root /newroot"))
        #expect(script.contains("exec switch_root /newroot /bin/sh \"$script\""))
    }

    @Test func theNewcArchiveIsAlignedAndEndsWithTheTrailer() {
        let archive = Initramfs(entries: [
            .directory("/dev"), .characterDevice("/dev/console", major: 5, minor: 1),
            .file("/init", Data("#!/bin/sh\n".utf8), executable: true),
        ]).archive()
        #expect(archive.count % 4 == 0)
        #expect(archive.prefix(6) == Data("070701".utf8))
        let text = String(decoding: archive, as: UTF8.self)
        #expect(text.contains("dev/console\0"))
        #expect(text.contains("TRAILER!!!\0"))
        // /init: mode 100755 in the second header field.
        #expect(text.contains("000081ED"))
    }

    @Test func qemuGetsTheRootReadOnlyAndTheResultsReadWriteInsideATimeout() {
        let command = QEMUCommand(
            configuration: configuration, timeout: "/usr/bin/timeout", qemu: "/usr/bin/qemu-system-x86_64",
            kernel: "/boot/vmlinuz-x", initramfs: "/cache/i.cpio", script: "/work/results/r1/guest-stack.sh")
        let arguments = command.arguments
        #expect(
            Array(arguments.prefix(5)) == [
                "/usr/bin/timeout", "--foreground", "--kill-after=10", "300", "/usr/bin/qemu-system-x86_64",
            ])
        #expect(arguments.contains("local,id=root,path=/,readonly=on,security_model=none,multidevs=remap"))
        #expect(arguments.contains("local,id=work,path=/work/results/r1,security_model=none,multidevs=remap"))
        #expect(arguments.contains("tcg,thread=multi,tb-size=128"))
        #expect(
            command.kernelCommandLine.contains(
                "blemu.work=/work/results/r1 blemu.script=/work/results/r1/guest-stack.sh"))
        #expect(!command.kernelCommandLine.contains("  "))
    }

    private static let system = BlueZInstall(
        version: "5.66", bluetoothd: "/usr/libexec/bluetooth/bluetoothd", toolDirectory: nil)
    private static let built = BlueZInstall(
        version: "5.82", bluetoothd: "/cache/bluez/5.82/bin/bluetoothd", toolDirectory: "/cache/bluez/5.82/bin")
    private static let copies = [
        GuestStack.Peripheral(profile: "/work/results/r1/profiles/hci0-a.yaml", nameSuffix: nil),
        GuestStack.Peripheral(profile: "/work/results/r1/profiles/hci1-b.yaml", nameSuffix: " 2"),
    ]

    /// The guest script for `configuration` booting `bluez` (the system's by default), with the two profile copies.
    private func guestScript(_ configuration: LabConfiguration, _ bluez: BlueZInstall = Self.system) -> String {
        GuestStack(
            configuration: configuration, command: ["true"], bluez: bluez, radio: "/cache/bluez/5.82/bin/btvirt",
            busybox: "/bin/busybox",
            profileCopies: Self.copies
        ).script
    }

    @Test func theStackRunsEachProfileOnItsOwnControllerAndTheCentralOnTheNext() {
        let script = guestScript(configuration, Self.system)
        #expect(
            script.contains(
                "'/opt/blemu/bin/blemu' run --adapter hci0 --bus system --control /run/blemu/hci0.sock \\\n"
                    + "    --events \"$W/events-hci0.jsonl\" '/work/results/r1/profiles/hci0-a.yaml'"))
        #expect(
            script.contains(
                "'/opt/blemu/bin/blemu' run --adapter hci1 --bus system --control /run/blemu/hci1.sock --name-suffix ' 2' \\\n"
                    + "    --events \"$W/events-hci1.jsonl\" '/work/results/r1/profiles/hci1-b.yaml'"))
        #expect(script.contains("export BLEMU_LAB_PERIPHERAL=hci0,hci1\n"))
        #expect(script.contains("export BLEMU_LAB_CENTRAL=hci2\n"))
        #expect(
            script.contains(
                "export BLEMU_LAB_CONTROL=/run/blemu/hci0.sock BLEMU_LAB_CONTROLS=/run/blemu/hci0.sock,/run/blemu/hci1.sock\n"
            ))
        #expect(script.contains("export BLEMU_LAB_EVENTS=\"$W/events-hci0.jsonl\""))
        #expect(script.contains("export BLEMU_LAB_BLUEZ_VERSION='5.66'\n"))
        #expect(script.contains("BLUETOOTHD='/usr/libexec/bluetooth/bluetoothd'\n"))
        #expect(GuestStack.functions.contains("\"$BLUETOOTHD\" -n -d -P battery -f \"$W/main.conf\""))
        #expect(script.contains("export PATH='/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'\n"))
        // A missing functions file would end PID 1 at the `.`: it is a step failure instead.
        #expect(script.contains("if [ ! -r \"$W/guest-functions.sh\" ]; then\n"))
        #expect(script.contains(". \"$W/guest-functions.sh\"\n\n"))
        #expect(script.contains("\nbring_up_stack\n"))
        #expect(GuestStack.functions.contains("btmon -w \"$W/btmon.snoop\""))
        #expect(GuestStack.mainConf.contains("[GATT]\nChannels = 1\n"))
        #expect(
            GuestStack.mainConf.contains("[General]\n# No Device Information")
                && GuestStack.mainConf.contains("DeviceID = false\n"))
    }

    /// `--ui`: each peripheral's view in the VM once the peripherals serve, on the guest's port 8080+K, which qemu
    /// forwards from the host's address and port+K; nothing else of the network reaches out (`restrict=on`).
    @Test func liveViewsStartInTheVMAndQemuForwardsTheHostsPortsToThem() {
        var withViews = configuration
        withViews.liveView = LabLiveView(host: "127.0.0.1", port: 9000, token: "t0k")
        let script = guestScript(withViews, Self.system)
        #expect(
            script.contains(
                "'/opt/blemu/bin/blemu' ui --control /run/blemu/hci1.sock --events \"$W/events-hci1.jsonl\" "
                    + "--listen 10.0.2.15:8081 --ui-token t0k >\"$W/ui-hci1.log\" 2>&1 &"))
        let network = script.range(of: "bring_up_network 10.0.2.15")
        let lastPeripheral = script.range(of: "advertising_alive hci1 $pid")
        let command = script.range(of: "step command")
        #expect(
            network != nil && lastPeripheral != nil && command != nil
                && lastPeripheral!.upperBound < network!.lowerBound && network!.upperBound < command!.lowerBound)
        #expect(!guestScript(configuration, Self.system).contains(" ui --control"), "no views without --ui")
        #expect(
            withViews.liveView?.qemuNetwork(peripherals: 2) == [
                "-nic",
                "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:9000-10.0.2.15:8080"
                    + ",hostfwd=tcp:127.0.0.1:9001-10.0.2.15:8081",
            ])
        #expect(withViews.liveView?.url(peripheral: 1) == "http://127.0.0.1:9001/?token=t0k")
        withViews.radio = .rootcanal
        withViews.airLauncher = "/usr/bin/blemu-cli"
        #expect(withViews.validationProblem()?.contains("--ui needs the btvirt radio") == true)
    }

    @Test func controllersAreLEOnlyUnlessDualModeIsAskedFor() {
        let leOnly = guestScript(configuration, Self.system)
        #expect(
            leOnly.contains("RADIO_KIND=btvirt RADIO='/cache/bluez/5.82/bin/btvirt' RADIO_ARGUMENTS='-L -l3'\n"))
        var dual = configuration
        dual.isDualMode = true
        let dualStack = guestScript(dual, Self.system)
        #expect(dualStack.contains("RADIO_KIND=btvirt RADIO='/cache/bluez/5.82/bin/btvirt' RADIO_ARGUMENTS='-l3'\n"))
    }

    @Test func aBuiltBlueZStartsItsOwnBluetoothdAndPutsItsToolsFirstOnPath() {
        let stack = guestScript(configuration, Self.built)
        #expect(stack.contains("BLUETOOTHD='/cache/bluez/5.82/bin/bluetoothd'\n"))
        #expect(stack.contains("export PATH='/cache/bluez/5.82/bin:/usr/local/sbin:"))
        #expect(stack.contains("export BLEMU_LAB_BLUEZ_VERSION='5.82'\n"))
    }

    @Test func aBlemuTheVMCannotSeeRunsFromTheResultsDirectory() {
        var hidden = configuration
        hidden.blemuExecutable = "/tmp/clone/.build/debug/blemu"
        #expect(hidden.validationProblem() == nil)
        #expect(hidden.guestBlemuExecutable == "/work/results/r1/bin/blemu")
        #expect(configuration.guestBlemuExecutable == "/opt/blemu/bin/blemu")
        let stack = guestScript(hidden, Self.system)
        #expect(stack.contains("'/work/results/r1/bin/blemu' run --adapter hci0"))
        #expect(stack.contains("export PATH='/work/results/r1/bin:/usr/local/sbin:"))
        var hiddenBlueZ = configuration
        hiddenBlueZ.bluez = BlueZInstall(version: "5.82", bluetoothd: "/tmp/b/bluetoothd", toolDirectory: "/tmp/b")
        #expect(hiddenBlueZ.validationProblem()?.contains("must be outside") == true)
    }

    @Test func aCheckoutUnderTmpIsMountedReadOnlyAtItsPathWithTheResultsOnTop() {
        var clone = configuration
        clone.workingDirectory = "/tmp/clone"
        clone.resultsDirectory = "/tmp/clone/.build/lab-results/r1"
        clone.blemuExecutable = "/tmp/clone/.build/debug/blemu"
        #expect(clone.validationProblem() == nil)
        #expect(clone.sharedCheckout == "/tmp/clone")
        // Inside the shared checkout, blemu runs where it is; no copy.
        #expect(clone.guestBlemuExecutable == "/tmp/clone/.build/debug/blemu")
        let arguments = QEMUCommand(
            configuration: clone, timeout: "/usr/bin/timeout", qemu: "/usr/bin/qemu-system-x86_64",
            kernel: "/boot/vmlinuz-x", initramfs: "/cache/i.cpio", script: "/tmp/clone/r1/guest-stack.sh"
        ).arguments
        #expect(arguments.contains("local,id=checkout,path=/tmp/clone,readonly=on,security_model=none,multidevs=remap"))
        #expect(arguments.contains("virtio-9p-pci,fsdev=checkout,mount_tag=blemu-checkout"))
        let script = guestScript(clone, Self.system)
        #expect(script.contains("blemu-checkout '/tmp/clone'"))
        #expect(script.contains("mount --bind /run/blemu-lab/work '/tmp/clone/.build/lab-results/r1'"))
        #expect(configuration.sharedCheckout == nil)
        var spaced = clone
        spaced.workingDirectory = "/tmp/my clone"
        #expect(spaced.validationProblem()?.contains("run from another directory") == true)
    }

    @Test func bluezNamesAVersionInTheCacheOrRefusesWithTheBuildCommand() throws {
        let cache = NSTemporaryDirectory() + "blemu-bluez-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        #expect(throws: BlueZInstall.ResolveError.self) { try BlueZInstall.resolve("9.99", cacheRoots: [cache]) }
        do {
            _ = try BlueZInstall.resolve("9.99", cacheRoots: [cache])
        } catch {
            #expect(error.description.contains("scripts/build-bluez 9.99"))
        }
        // A fake build whose bluetoothd prints its version, as the real one does.
        let bin = cache + "/9.99/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for tool in ["bluetoothd", "btvirt", "btmon"] {
            try "#!/bin/sh\necho 9.99\n".write(toFile: bin + "/" + tool, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin + "/" + tool)
        }
        #expect(throws: BlueZInstall.ResolveError.self) { try BlueZInstall.resolve("9.99", cacheRoots: [cache]) }
        _ = FileManager.default.createFile(atPath: cache + "/9.99/.complete", contents: Data())
        let install = try BlueZInstall.resolve("9.99", cacheRoots: [cache])
        #expect(install.version == "9.99" && install.toolDirectory == bin)
        #expect(try BlueZInstall.resolve(bin).bluetoothd == bin + "/bluetoothd")
        // The lab's radio is a patched btvirt only: this build's has no btvirt-patches yet.
        #expect(BlueZInstall.labRadio(for: install, cacheRoots: [cache]) == nil)
        #expect(BlueZInstall.radioPatches(of: bin + "/btvirt") == "unknown")
        _ = FileManager.default.createFile(atPath: cache + "/9.99/btvirt-patches", contents: Data("x\ny\n".utf8))
        #expect(BlueZInstall.labRadio(for: install, cacheRoots: [cache]) == bin + "/btvirt")
        // The run's transcript names what the radio was built with, so an old build shows what it lacks.
        #expect(BlueZInstall.radioPatches(of: bin + "/btvirt") == "x, y")
        #expect(BlueZInstall.labRadio(for: nil, cacheRoots: [cache]) == bin + "/btvirt")
        #expect(BlueZInstall.labRadio(for: nil, cacheRoots: [cache + "/none"]) == nil)
    }

    /// A cache filled before the newest btvirt patch still has a radio: `lab check` says what it lacks and how to
    /// build it again, and the list it compares with is the one scripts/build-bluez writes.
    @Test func aRadioBuiltBeforeTodaysPatchesIsAWarningNamingWhatItLacks() throws {
        let cache = NSTemporaryDirectory() + "blemu-radio-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let bin = cache + "/9.99/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(
            atPath: bin + "/btvirt", contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        let patches = cache + "/9.99/btvirt-patches"
        try "btvirt-ll-timing\nbtvirt-conn-handles\n".write(toFile: patches, atomically: true, encoding: .utf8)
        let old = LabPrerequisites.radioItem(bin + "/btvirt")
        #expect(old.isPresent)
        #expect(
            old.warning == "built without btvirt-first-report (docs/lab.md, \"The radio\"): run scripts/build-bluez "
                + "9.99 again, or install a newer blemu-lab")
        let report = LabPrerequisites(kernel: nil, items: [old]).report
        #expect(
            report.hasPrefix("warning btvirt with the lab's link timing: \(bin)/btvirt: built without"), "\(report)")

        try BlueZInstall.currentRadioPatches.joined(separator: "\n")
            .write(toFile: patches, atomically: true, encoding: .utf8)
        let current = LabPrerequisites.radioItem(bin + "/btvirt")
        #expect(current.isPresent && current.warning == nil)
        #expect(LabPrerequisites(kernel: nil, items: [current]).report.hasPrefix("ok      btvirt"))
        #expect(LabPrerequisites.radioItem(nil, cacheRoots: [cache]).problem?.contains("no build in \(cache)") == true)

        let buildScript = try String(contentsOfFile: LabScenario.package + "/scripts/build-bluez", encoding: .utf8)
        let written = try #require(buildScript.split(separator: "\n").first { $0.contains("btvirt-patches\"") })
        #expect(written.contains("printf '%s\\n' \(BlueZInstall.currentRadioPatches.joined(separator: " ")) >"))
    }

    /// The guest's wait gives up after the step timeout by the clock, whatever one poll costs: the functions are
    /// taken from guest-functions.sh with the generated script's settings and run with a condition that never holds
    /// and a poll that takes 0.3 s.
    @Test func aGuestWaitGivesUpAfterTheStepTimeoutHoweverSlowEachPollIs() throws {
        var quick = configuration
        quick.stepTimeout = .seconds(1)
        let script = guestScript(quick)
        let functions = try Self.waitAndRadioFunctions(of: script)
        let (status, text) = try Self.shell(
            """
            tries=0
            die() { echo "died: $* ($tries tries)"; exit 3; }
            \(functions)
            slow_never() { tries=$((tries + 1)); sleep 0.3; false; }
            wait_for "the impossible" slow_never
            echo "returned"
            """)
        #expect(status == 3, "\(text)")
        #expect(text.hasPrefix("died: gave up after 1 s waiting for the impossible"), "\(text)")
        // Ten polls of 0.1 s would be "1 s" by count; at 0.4 s a poll the clock stops it after three or four.
        let tries = text.split(separator: "(").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? 0
        #expect((1..<10).contains(tries), "\(text)")
    }

    /// The controllers step, run with a stand-in radio whose first start leaves both controllers in set-up (the
    /// kernel's `Opcode 0x0c03 failed` line, and no index in mgmt's list): the radio is started once more, and a
    /// second failure ends the step naming the kernel's line. `btmgmt`, `dmesg` and sysfs are stand-ins too.
    @Test(arguments: [(failures: 0, starts: 1), (failures: 1, starts: 2), (failures: 2, starts: 2)])
    func aControllerWhoseSetUpFailedGetsTheRadioStartedAgainOnce(failures: Int, starts: Int) throws {
        let directory = NSTemporaryDirectory() + "blemu-radio-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/class", withIntermediateDirectories: true)
        // Each start adds two controllers, which go when it is killed; the first `failures` starts fail their set-up.
        let radio = directory + "/btvirt"
        try """
        #!/bin/sh
        d=\(directory)
        n=$(( $(cat "$d/starts" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$d/starts"
        touch "$d/class/hci0" "$d/class/hci1"
        if [ "$n" -le \(failures) ]; then
            echo "[   12.5] Bluetooth: hci0: Opcode 0x0c03 failed: -110" >> "$d/dmesg"
        else
            echo 2 > "$d/mgmt"
        fi
        parent=$$
        (while kill -0 "$parent" 2>/dev/null; do sleep 0.05; done; rm -f "$d/class/hci0" "$d/class/hci1") &
        exec sleep 30
        """.write(toFile: radio, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: radio)
        var quick = LabConfiguration(
            resultsDirectory: directory, controllers: 2, profiles: [], blemuExecutable: "/opt/blemu/bin/blemu",
            workingDirectory: "/work/checkout")
        quick.stepTimeout = .seconds(3)
        let script = GuestStack(
            configuration: quick, command: ["true"], bluez: Self.system, radio: radio, busybox: "/bin/busybox",
            profileCopies: []
        ).script
        let functions = try Self.waitAndRadioFunctions(of: script)
        let (status, text) = try Self.shell(
            """
            W=\(directory)
            die() { echo "died: $*"; kill -9 "$radio_pid"; exit 3; }
            step() { echo "step $1"; }
            \(functions)
            bt_class=$W/class
            timeout() { shift 2; "$@"; }
            btmgmt() { [ -f "$W/mgmt" ] && echo "Index list with $(cat "$W/mgmt") items"; }
            dmesg() { cat "$W/dmesg" 2>/dev/null; }
            bring_up_btvirt
            echo "up"
            kill -9 "$radio_pid"
            """)
        let started = try String(contentsOfFile: directory + "/starts", encoding: .utf8)
        #expect(Int(started.trimmingCharacters(in: .whitespacesAndNewlines)) == starts, "\(text)")
        #expect(text.contains("step radio-again") == (failures > 0), "\(text)")
        if failures > 0 {
            #expect(
                text.contains("a controller's set-up failed (Bluetooth: hci0: Opcode 0x0c03 failed: -110); starting"),
                "\(text)")
        }
        if failures < 2 {
            #expect(status == 0 && text.hasSuffix("up\n"), "\(text)")
        } else {
            #expect(status == 3, "\(text)")
            #expect(
                text.contains(
                    "died: gave up after 3 s waiting for mgmt to list 2 controllers (kernel: Bluetooth: hci0: Opcode"),
                "\(text)")
        }
    }

    /// The guest's shell functions from `wait_for` through the radio's, after the settings `script` gives them (the
    /// step timeout, the controllers, the radio), to run on the host with stand-ins.
    private static func waitAndRadioFunctions(of script: String) throws -> String {
        let settings = script.split(separator: "\n").filter {
            $0.hasPrefix("STEP_SECONDS=") || $0.hasPrefix("RADIO_KIND=")
        }
        let functions = GuestStack.functions
        let start = try #require(functions.range(of: "uptime_seconds() {"))
        let end = try #require(functions.range(of: "bluez_get() {", range: start.upperBound..<functions.endIndex))
        return settings.joined(separator: "\n") + "\n" + functions[start.lowerBound..<end.lowerBound]
    }

    /// Runs `text` with /bin/sh: its exit status and standard output.
    private static func shell(_ text: String) throws -> (status: Int32, output: String) {
        let shell = try ChildProcess.run(["/bin/sh", "-c", text])
        return (shell.status, shell.output)
    }

    @Test func theUserCacheComesBeforeTheBlemuLabPackageAndAVersionInBothIsTheCaches() throws {
        let roots = LabCache.roots("bluez", environment: ["BLEMU_CACHE": "/c"])
        #expect(roots == ["/c/bluez", "/usr/lib/blemu-lab/bluez"])
        let base = NSTemporaryDirectory() + "blemu-roots-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let user = base + "/cache/bluez"
        let packaged = base + "/usr/lib/blemu-lab/bluez"
        // Fake builds whose bluetoothd prints its version, each finished and with a patched btvirt.
        for (root, version) in [(packaged, "9.99"), (packaged, "9.98"), (user, "9.98")] {
            let bin = "\(root)/\(version)/bin"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            for tool in ["bluetoothd", "btvirt", "btmon"] {
                try "#!/bin/sh\necho \(version)\n".write(toFile: bin + "/" + tool, atomically: true, encoding: .utf8)
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin + "/" + tool)
            }
            for stamp in [".complete", "btvirt-patches"] {
                _ = FileManager.default.createFile(atPath: "\(root)/\(version)/\(stamp)", contents: Data("x\n".utf8))
            }
        }
        let builds = BlueZInstall.available(cacheRoots: [user, packaged]).filter { $0.toolDirectory != nil }
        #expect(builds.map(\.version) == ["9.98", "9.99"])
        #expect(builds.map(\.toolDirectory) == [user + "/9.98/bin", packaged + "/9.99/bin"])
        #expect(try BlueZInstall.resolve("9.99", cacheRoots: [user, packaged]).toolDirectory == packaged + "/9.99/bin")
        #expect(BlueZInstall.labRadio(for: nil, cacheRoots: [user, packaged]) == user + "/9.98/bin/btvirt")
        let packagedRadio = BlueZInstall.labRadio(for: nil, cacheRoots: [base + "/none", packaged])
        #expect(packagedRadio == packaged + "/9.99/bin/btvirt")
    }

    /// A script the user left in /tmp exists on the host but not in the VM (its /tmp is a tmpfs of its own): the
    /// run warns about that word, and about no other.
    @Test func aCommandNamingAFileInTmpIsToldTheVMCannotSeeIt() throws {
        let checkout = "/tmp/blemu-checkout-\(getpid())"
        let script = checkout + "/central.py"
        try FileManager.default.createDirectory(atPath: checkout, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: checkout) }
        #expect(FileManager.default.createFile(atPath: script, contents: Data()))
        var run = configuration
        run.workingDirectory = "/work"
        let results = run.resultsDirectory + "/central.py"
        let command = ["/usr/bin/python3", script, "/tmp/made-in-the-vm", "relative.py", results, "/tmp"]
        #expect(run.pathsHiddenFromGuest(in: command) == [script])
        // Run from that checkout, which the VM mounts at its path, the same file is seen.
        run.workingDirectory = checkout
        #expect(run.pathsHiddenFromGuest(in: command) == [])
    }

    @Test func shellQuotingSurvivesSpacesQuotesAndDollars() throws {
        let words = ["plain", "two words", "it's", "$HOME", "a\"b", "", "back\\slash"]
        let printed = try ChildProcess.run(
            ["/bin/sh", "-c", "printf '%s\\n' " + words.map(GuestStack.shellQuote).joined(separator: " ")])
        #expect(printed.output == words.map { $0 + "\n" }.joined())
    }

    @Test func configurationsTheVMCannotCarryAreRefused() {
        var tooFew = configuration
        tooFew.controllers = 2
        #expect(tooFew.validationProblem()?.contains("need 3 controllers") == true)
        var comma = configuration
        comma.resultsDirectory = "/work/a,b"
        #expect(comma.validationProblem() != nil)
        var relative = configuration
        relative.resultsDirectory = "results"
        #expect(relative.validationProblem() != nil)
        #expect(configuration.validationProblem() == nil)
    }

    @Test func twoRunsStartedInTheSameMillisecondGetResultsDirectoriesOfTheirOwn() throws {
        let base = NSTemporaryDirectory() + "blemu-results-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let now = Date()
        let first = try LabConfiguration.makeFreshResultsDirectory(under: base, now: now)
        let second = try LabConfiguration.makeFreshResultsDirectory(under: base, now: now)
        #expect(first == LabConfiguration.defaultResultsDirectory(under: base, now: now))
        #expect(second == first + "-2")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: second, isDirectory: &isDirectory) && isDirectory.boolValue)
    }

    /// Results used to pile up in the user's repository; the cache keeps the newest runs only.
    @Test func pruningKeepsTheNewestRunsAndNothingElseIsTouched() throws {
        let base = NSTemporaryDirectory() + "blemu-prune-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        var made: [String] = []
        for second in 0..<5 {
            made.append(
                try LabConfiguration.makeFreshResultsDirectory(
                    under: base, now: Date(timeIntervalSince1970: Double(second) * 60)))
        }
        try FileManager.default.createDirectory(atPath: base + "/lab-results/mine", withIntermediateDirectories: true)
        let removed = LabConfiguration.pruneResults(under: base, keep: 2)
        #expect(removed == Array(made.prefix(3)))
        let left = try FileManager.default.contentsOfDirectory(atPath: base + "/lab-results").sorted()
        #expect(left == (made.suffix(2).map { URL(fileURLWithPath: $0).lastPathComponent } + ["mine"]).sorted())
    }

    @Test func aStaticBusyboxIsToldApartFromADynamicShell() {
        guard FileManager.default.fileExists(atPath: "/bin/busybox") else { return }
        #expect(LabPrerequisites.isStaticELF("/bin/busybox"))
        #expect(!LabPrerequisites.isStaticELF("/bin/sh"))
    }

    @Test func aMissingRigNamesThePackagesToInstall() {
        let prerequisites = LabPrerequisites.check(root: "/nonexistent-root")
        #expect(!prerequisites.isSatisfied)
        #expect(prerequisites.missingPackages.contains("qemu-system-x86"))
        #expect(prerequisites.missingPackages.contains("bluez-test-tools"))
        #expect(prerequisites.report.contains("apt-get install"))
    }
}

/// The guest's liveness check, run by /bin/sh on this machine against a real zombie.
@Suite struct GuestProcessCheckTests {
    @Test func aChildThatExitedCountsAsDeadEvenBeforeItIsReaped() throws {
        // The parent shell never waits for `true`, so it stays a zombie while the check runs.
        let script =
            GuestStack.functions + """

                true & child=$!
                sleep 0.3
                process_alive $child && echo alive || echo dead
                process_alive $$ && echo self-alive
                """
        #expect(try ChildProcess.run(["/bin/sh", "-c", script]).output == "dead\nself-alive\n")
    }
}

/// A fleet's copies: `{n}` numbers them where the profile says, else the copies after the first get a suffix.
struct ProfileCopiesTests {
    @Test func aPlaceholderIsNumberedPerProfileAndAProfileWithoutOneGetsSuffixes() {
        let copies = ProfileCopies.plan([
            ("/p/sensor.yaml", "name: Sensor {n}\n"), ("/p/strap.yaml", "name: Strap\n"),
            ("/p/sensor.yaml", "name: Sensor {n}\n"), ("/p/strap.yaml", "name: Strap\n"),
            ("/p/strap.yaml", "name: Strap\n"), ("/p/single.yaml", "name: Single\n"),
        ])
        #expect(
            copies.map(\.text) == [
                "name: Sensor 1\n", "name: Strap\n", "name: Sensor 2\n", "name: Strap\n", "name: Strap\n",
                "name: Single\n",
            ])
        #expect(copies.map(\.nameSuffix) == [nil, nil, nil, " 2", " 3", nil])
    }
}
