import Foundation
import Testing

@testable import Lab

/// What the lab generates (initramfs, init scripts, qemu arguments), checked without booting anything.
struct LabGenerationTests {
    private let configuration = LabConfiguration(
        resultsDirectory: "/work/results/r1", controllers: 3, profiles: ["/p/a.yaml", "/p/b.yaml"],
        blemuExecutable: "/opt/blemu/bin/blemu", workingDirectory: "/work/checkout")

    @Test func theInitramfsInitLoadsTheModulesInLabMdOrder() {
        let script = GuestInit.script
        #expect(
            script.contains(
                "for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache "
                    + "9pnet 9pnet_virtio 9p; do"))
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

    @Test func theStackRunsEachProfileOnItsOwnControllerAndTheCentralOnTheNext() {
        let stack = GuestStack(
            configuration: configuration, command: ["true"], bluetoothd: "/usr/libexec/bluetooth/bluetoothd",
            busybox: "/bin/busybox",
            profileCopies: ["/work/results/r1/profiles/hci0-a.yaml", "/work/results/r1/profiles/hci1-b.yaml"])
        let script = stack.script
        #expect(
            script.contains(
                "'/opt/blemu/bin/blemu' run --adapter hci0 --bus system '/work/results/r1/profiles/hci0-a.yaml'"))
        #expect(
            script.contains(
                "'/opt/blemu/bin/blemu' run --adapter hci1 --bus system '/work/results/r1/profiles/hci1-b.yaml'"))
        #expect(script.contains("export BLEMU_LAB_PERIPHERAL=hci0,hci1\n"))
        #expect(script.contains("export BLEMU_LAB_CENTRAL=hci2\n"))
        #expect(script.contains("btvirt -l3 "))
        #expect(script.contains("-n -d -P battery -f \"$W/main.conf\""))
        #expect(GuestStack.mainConf.contains("[GATT]\nChannels = 1\n"))
    }

    @Test func shellQuotingSurvivesSpacesQuotesAndDollars() throws {
        let words = ["plain", "two words", "it's", "$HOME", "a\"b", "", "back\\slash"]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "printf '%s\\n' " + words.map(GuestStack.shellQuote).joined(separator: " ")]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(String(decoding: output, as: UTF8.self) == words.map { $0 + "\n" }.joined())
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
            GuestStack.processAliveFunction + """

                true & child=$!
                sleep 0.3
                process_alive $child && echo alive || echo dead
                process_alive $$ && echo self-alive
                """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(text == "dead\nself-alive\n")
    }
}
