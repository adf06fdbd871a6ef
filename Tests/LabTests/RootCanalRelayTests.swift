import Foundation
import Testing

@testable import Lab

/// The relay's framing and its two changes to RootCanal's stream, on bytes as bluetoothd's kernel would get them.
struct RootCanalRelayTests {
    /// Command Complete of LE Read Local Supported Features with `features` (status 0, one command allowed).
    private static func localFeatures(_ first: UInt8) -> [UInt8] {
        [0x04, 0x0E, 0x0C, 0x01, 0x03, 0x20, 0x00, first, 0, 0, 0, 0, 0, 0, 0]
    }
    /// LE Read Remote Features Complete for handle 0x0EFE.
    private static let remoteFeatures: [UInt8] = [0x04, 0x3E, 0x0C, 0x04, 0x00, 0xFE, 0x0E, 0x3D, 0, 0, 0, 0, 0, 0, 0]
    /// An ACL packet for handle 0x0EFE with 5 bytes (an ATT Read Request and more).
    private static let acl: [UInt8] = [0x02, 0xFE, 0x2E, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x0A]

    @Test func theFramerReassemblesPacketsSplitAndJoinedAnywhere() throws {
        let stream = Self.localFeatures(0x3D) + Self.acl + Self.remoteFeatures
        for cut in 1..<stream.count {
            var framer = H4Framer()
            var packets: [[UInt8]] = []
            framer.append(stream[..<cut])
            while let packet = try framer.next() { packets.append(packet) }
            framer.append(stream[cut...])
            while let packet = try framer.next() { packets.append(packet) }
            #expect(packets == [Self.localFeatures(0x3D), Self.acl, Self.remoteFeatures], "cut at \(cut)")
        }
    }

    @Test func theFramerReadsEachKindsLengthFromItsOwnHeader() throws {
        // SCO: 1-byte length; ISO: 14-bit length (the top two bits are flags).
        let sco: [UInt8] = [0x03, 0x01, 0x00, 0x02, 0xAA, 0xBB]
        let iso: [UInt8] = [0x05, 0x01, 0x00, 0x01, 0xC0, 0xEE]
        var framer = H4Framer()
        framer.append(sco + iso)
        #expect(try framer.next() == sco)
        #expect(try framer.next() == iso)
        #expect(try framer.next() == nil)
    }

    @Test func aByteThatIsNoIndicatorStopsTheFramer() {
        var framer = H4Framer()
        framer.append([0x09, 0x00])
        #expect(throws: H4Framer.UnknownIndicator(byte: 0x09)) { try framer.next() }
    }

    @Test func lePingIsClearedOnlyInTheLocalFeaturesReply() {
        var reply = Self.localFeatures(0x3D)  // encryption, extended reject, peripheral features, ping, DLE
        #expect(ControllerStream.clearLEPing(in: &reply))
        #expect(reply == Self.localFeatures(0x2D))
        var without = Self.localFeatures(0x2D)
        #expect(!ControllerStream.clearLEPing(in: &without))
        // A failed reply, or another command's, is left alone.
        var failed = Self.localFeatures(0x3D)
        failed[6] = 0x01
        #expect(!ControllerStream.clearLEPing(in: &failed))
        var other = Self.localFeatures(0x3D)
        other[4] = 0x02
        #expect(!ControllerStream.clearLEPing(in: &other))
    }

    @Test func remoteFeaturesWaitAndEverythingAfterThemWaitsBehind() {
        let start = ContinuousClock.now
        var stream = ControllerStream()
        stream.received(Self.acl, at: start)
        stream.received(Self.remoteFeatures, at: start)
        stream.received(Self.acl, at: start + .milliseconds(10))
        #expect(stream.due(at: start) == [Self.acl])
        #expect(stream.due(at: start + .milliseconds(199)).isEmpty)
        #expect(stream.nextDue == start + ControllerStream.remoteFeaturesHold)
        #expect(stream.due(at: start + .milliseconds(200)) == [Self.remoteFeatures, Self.acl])
        #expect(stream.nextDue == nil)
        #expect(stream.featuresHeld == 1)
        // Once the hold is over, packets go at once again.
        stream.received(Self.acl, at: start + .milliseconds(300))
        #expect(stream.due(at: start + .milliseconds(300)) == [Self.acl])
    }

    @Test func theStreamClearsLEPingOnTheWay() {
        let start = ContinuousClock.now
        var stream = ControllerStream()
        stream.received(Self.localFeatures(0x3D), at: start)
        #expect(stream.due(at: start) == [Self.localFeatures(0x2D)])
        #expect(stream.pingsCleared == 1)
    }

    @Test func onRootCanalQEMURunsInsideTheAirWithASerialPortPerController() {
        var configuration = LabConfiguration(
            resultsDirectory: "/work/results/r1", controllers: 3, blemuExecutable: "/opt/blemu/bin/blemu")
        configuration.radio = .rootcanal
        configuration.airLauncher = "/opt/blemu/bin/blemu-cli"
        let air = QEMUCommand.Air(
            unshare: "/usr/bin/unshare", launcher: "/opt/blemu/bin/blemu-cli", rootcanal: "/venv/rootcanal",
            isPrivileged: false)
        let command = QEMUCommand(
            configuration: configuration, timeout: "/usr/bin/timeout", qemu: "/usr/bin/qemu-system-x86_64",
            kernel: "/boot/vmlinuz-x", initramfs: "/cache/i.cpio", script: "/work/results/r1/guest-stack.sh", air: air)
        let arguments = command.arguments
        #expect(arguments.first == "/usr/bin/timeout")
        #expect(arguments.filter { $0.hasPrefix("pci-serial,chardev=radio") }.count == 3)
        #expect(arguments.contains("socket,id=radio2,host=127.0.0.1,port=6502,nodelay=on"))
        #expect(
            QEMUCommand.airLaunch(air, plan: "/work/results/r1/air-plan.json") == [
                "/usr/bin/unshare", "--map-root-user", "--net", "--", "/opt/blemu/bin/blemu-cli", "lab", "air",
                "--rootcanal", "/venv/rootcanal", "--plan", "/work/results/r1/air-plan.json",
            ])
        // A fleet VM's ports follow the controllers before it on the air.
        var second = command
        second.firstController = 3
        #expect(second.arguments.contains("socket,id=radio0,host=127.0.0.1,port=6503,nodelay=on"))
        #expect(command.kernelCommandLine.hasSuffix(" 8250.nr_uarts=7"))
        #expect(configuration.validationProblem() == nil)
        configuration.controllers = 29
        #expect(configuration.validationProblem()?.contains("at most 28 on RootCanal") == true)
    }

    @Test func onRootCanalTheGuestAttachesEachSerialPortInTurnAndAdvertisesEvery100ms() {
        var configuration = LabConfiguration(
            resultsDirectory: "/work/results/r1", controllers: 2, blemuExecutable: "/opt/blemu/bin/blemu")
        configuration.radio = .rootcanal
        let stack = GuestStack(
            configuration: configuration, command: ["true"],
            bluez: BlueZInstall(version: "5.66", bluetoothd: "/usr/libexec/bluetooth/bluetoothd", toolDirectory: nil),
            radio: "/usr/bin/btvirt", busybox: "/bin/busybox", profileCopies: [])
        let script = stack.script
        #expect(script.contains("RADIO_KIND=rootcanal\n"))
        #expect(GuestStack.functions.contains("modprobe hci_uart"))
        #expect(GuestStack.functions.contains(#"btattach -B "/dev/$tty" -P h4"#))
        #expect(GuestStack.functions.contains("controllers_listed $((i + 1))"))
        #expect(!script.contains("/usr/bin/btvirt"))
        #expect(GuestStack.mainConf(for: .rootcanal).contains("MinAdvertisementInterval = 0x00a0"))
        #expect(GuestStack.mainConf(for: .rootcanal).contains("DeviceID = false\nControllerMode = le\n"))
        #expect(!GuestStack.mainConf(for: .rootcanal, dualMode: true).contains("ControllerMode"))
        #expect(!GuestStack.mainConf(for: .btvirt).contains("[LE]"))
    }
}
