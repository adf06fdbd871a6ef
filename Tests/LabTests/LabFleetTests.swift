import Foundation
import Testing

@testable import Lab

/// How a run spreads over VMs on RootCanal's air, and what each VM's script does with its part: planned and
/// generated, nothing booted (`RootCanalRelayTests` and the fleet scenario boot them).
struct LabFleetTests {
    private static func fleet(_ devices: Int, radio: LabConfiguration.Radio = .rootcanal) -> LabConfiguration {
        var configuration = LabConfiguration(
            resultsDirectory: "/work/results/r1", controllers: devices + 1,
            profiles: Array(repeating: "/p/strap.yaml", count: devices), blemuExecutable: "/opt/blemu/bin/blemu")
        configuration.radio = radio
        configuration.airLauncher = "/opt/blemu/bin/blemu-cli"
        return configuration
    }

    @Test func aFleetThatFitsOneVMStaysInIt() {
        let plan = LabFleet(Self.fleet(15))
        #expect(!plan.spansMachines)
        #expect(plan.machines.map(\.profiles) == [0..<15])
        #expect(plan.controllers == 16)
    }

    @Test func sixtyDevicesTakeFourVMsBesideTheCentralsOwn() {
        let plan = LabFleet(Self.fleet(60))
        #expect(plan.machines.map(\.name) == ["vm0", "vm1", "vm2", "vm3", "vm4"])
        #expect(plan.machines[0].configuration.profiles.isEmpty && plan.machines[0].configuration.controllers == 1)
        #expect(plan.machines.dropFirst().map(\.profiles) == [0..<15, 15..<30, 30..<45, 45..<60])
        #expect(plan.machines.map(\.firstController) == [0, 1, 16, 31, 46])
        #expect(plan.machines[2].configuration.resultsDirectory == "/work/results/r1/vm2")
        #expect(plan.controllers == 61)
        // The configuration is valid although 61 controllers exceed what one VM takes.
        #expect(Self.fleet(60).validationProblem() == nil)
    }

    @Test func peripheralsOnAnotherSystemGetAVMOfTheirOwnEvenAlone() throws {
        var configuration = Self.fleet(1)
        let kernel = LabKernel(release: "6.12.1", image: "/k/vmlinuz", modules: "/k/modules", isSystem: false)
        let bluez = BlueZInstall(version: "5.82", bluetoothd: "/b/bluetoothd", toolDirectory: "/b")
        configuration.peripheralSystem = LabSystem(name: "debian-13", kernel: kernel, bluez: bluez)
        let plan = LabFleet(configuration)
        #expect(plan.machines.count == 2)
        #expect(plan.machines[1].configuration.bluez == bluez)
        #expect(plan.machines[1].configuration.kernel == kernel)
        #expect(plan.machines[0].configuration.bluez == nil)
        // Without profiles there is nothing to serve elsewhere: one VM, its hci0 free for the command.
        configuration.profiles = []
        #expect(!LabFleet(configuration).spansMachines)
        configuration.radio = .btvirt
        #expect(configuration.validationProblem()?.contains("need --radio rootcanal") == true)
    }

    @Test func btvirtNeverSpreads() {
        #expect(!LabFleet(Self.fleet(15, radio: .btvirt)).spansMachines)
        #expect(Self.fleet(16, radio: .btvirt).validationProblem()?.contains("btvirt holds 16") == true)
    }

    private static let bluez = BlueZInstall(
        version: "5.66", bluetoothd: "/usr/libexec/bluetooth/bluetoothd", toolDirectory: nil)

    @Test func theCentralsVMWaitsForEachFleetVMAndListsTheirPeripherals() {
        let plan = LabFleet(Self.fleet(20))
        var stack = GuestStack(
            configuration: plan.machines[0].configuration, command: ["true"], bluez: Self.bluez, radio: "/btvirt",
            busybox: "/bin/busybox", profileCopies: [])
        stack.role = .central(
            fleet: plan.peripheralMachines.map {
                .init(directory: $0.configuration.resultsDirectory, firstController: $0.firstController)
            })
        let script = stack.script
        #expect(script.contains("for vm in '/work/results/r1/vm1' '/work/results/r1/vm2'; do"))
        // Each fleet peripheral gets a socket here, joined to its place's port on the air's loopback: vm2's
        // controllers start at place 16 (vm1 holds 15).
        #expect(script.contains("for entry in '/work/results/r1/vm1':1 '/work/results/r1/vm2':16; do"))
        #expect(script.contains(#"port=$(( 7200 + first + ${controller#hci} ))"#))
        #expect(script.contains(#"joins="$joins --join unix:$control=tcp:10.0.2.2:$port""#))
        #expect(
            script.contains(#"export BLEMU_LAB_CONTROL="${fleet_controls%%,*}" BLEMU_LAB_CONTROLS="$fleet_controls""#))
        #expect(script.contains(#"until [ -e "$vm/serving" ]; do"#))
        #expect(script.contains(#"[ -e "$vm/lab-failure" ] || [ -e "$vm/vm-exit" ]"#))
        #expect(script.contains(#"fleet_names="$fleet_names${fleet_names:+,}${vm##*/}/$controller""#))
        #expect(script.contains("export BLEMU_LAB_CENTRAL=hci0\n"))
        // The fleet is waited for before the command, never after.
        let fleet = script.range(of: "step fleet")
        let command = script.range(of: "step command")
        #expect(fleet != nil && command != nil && fleet!.lowerBound < command!.lowerBound)
    }

    @Test func aFleetVMServesUntilTheRunEndsAndLeavesItsCounters() throws {
        let plan = LabFleet(Self.fleet(20))
        let machine = plan.machines[2]
        var stack = GuestStack(
            configuration: machine.configuration, command: [], bluez: Self.bluez, radio: "/btvirt",
            busybox: "/bin/busybox",
            profileCopies: machine.profiles.map { _ in GuestStack.Peripheral(profile: "/p.yaml", nameSuffix: nil) })
        stack.role = .peripherals
        let script = stack.script
        #expect(script.contains(#": > "$W/serving""#))
        #expect(script.contains(#"until [ -e "$W/stop" ]; do sleep 0.2; done"#))
        #expect(script.contains("ctl /run/blemu/hci4.sock counters"))
        #expect(!script.contains("step command"))
        // Its control sockets are reachable from the command's VM before it says it serves.
        let bridge = try #require(script.range(of: "lab bridge --join tcp:10.0.2.15:7000=unix:/run/blemu/hci0.sock"))
        #expect(script.contains("--join tcp:10.0.2.15:7004=unix:/run/blemu/hci4.sock"))
        #expect(bridge.lowerBound < script.range(of: "step serving")!.lowerBound)
    }

    @Test func theSummaryReadsEachFleetVMsCountersAndNamesTheVMsThatFailed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/vm1", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"counters":{"requests":4,"answered":4,"notificationsSent":9}}"#.write(
            toFile: directory + "/vm1/counters-hci0.json", atomically: true, encoding: .utf8)
        try "vm2: power\ngave up after 60 s waiting for hci0 powered\n".replacingOccurrences(of: "\n", with: " ")
            .appending("\n").write(toFile: directory + "/fleet-failures", atomically: true, encoding: .utf8)
        let run = LabRun(
            exitCode: 0, resultsDirectory: directory, controllers: [], peripherals: ["vm1/hci0"], central: "hci0",
            steps: [], total: .seconds(1), bluezVersion: "5.66")
        let summary = LabSummary(run: run, profiles: ["/p/strap.yaml"])
        #expect(summary.peripherals.first?.requests == 4)
        #expect(summary.peripherals.first?.notificationsSent == 9)
        #expect(summary.failedMachines.count == 1)
        #expect(summary.line.hasSuffix("; FAILED vm2: power gave up after 60 s waiting for hci0 powered "))
    }
}
