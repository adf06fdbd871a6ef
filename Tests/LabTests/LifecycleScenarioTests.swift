import Foundation
import Testing

@testable import Lab

/// The real `blemu run` on hci0 through a bluetoothd restart, an adapter power cycle and its own `disconnect` fault,
/// with a python3-dbus central on hci1 reading after each (`LifecycleScenario`: one boot, assertions on its files).
@Suite(
    .needsLab, .needsBlemuRun,
    .labSuiteTimeLimit)
struct LifecycleScenarioTests {
    /// The run, checked to have finished the script: a failed step names itself in the message.
    private func finishedRun(_ system: LabSystem) async throws -> LabRun {
        try await LabTests.finishedRun(
            of: LifecycleScenario.shared, on: system, showing: ["blemu-run.log", "events.jsonl"])
    }

    @Test(arguments: LabScenario.boundingSystems) func theCentralFindsAndReadsTheMarkerBeforeAndAfterEachDisruption(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        for name in LifecycleScenario.reads {
            let text = read(run, name)
            #expect(text.contains("found after"), "\(name): \(text)")
            #expect(text.contains("read \(LifecycleScenario.markerHex)\n"), "\(name): \(text)")
        }
    }

    @Test(arguments: LabScenario.boundingSystems) func blemuNoticesTheRestartOfBluetoothdAndRegistersEverythingAgain(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let log = read(run, "blemu-run.log")
        for line in [
            "left the bus: its registrations are gone", "bluetoothd is back as",
            "registered agent, application, advertisement again",
        ] {
            #expect(log.contains(line), "\(tails(run, ["blemu-run.log"]))")
        }
        let types = events(run).map { "\($0["type"] ?? "")/\($0["state"] ?? "")" }
        let resetting = try #require(types.firstIndex(of: "state/resetting"), "\(types)")
        #expect(types[resetting...].contains("restart/"), "\(types)")
        #expect(read(run, "bluetoothd-cmdline.txt").contains("-P battery"), "restarted as the stack started it")
    }

    @Test(arguments: LabScenario.boundingSystems) func aPowerCycleIsReportedAndAdvertisingResumes(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let log = read(run, "blemu-run.log")
        for line in ["adapter hci0 powered off", "adapter hci0 powered on"] {
            #expect(log.contains(line), "\(tails(run, ["blemu-run.log"]))")
        }
        let states = events(run).compactMap { $0["state"] as? String }
        let off = try #require(states.lastIndex(of: "poweredOff"), "\(states)")
        #expect(states[off...].contains("poweredOn"), "\(states)")
        #expect(read(run, "active-instances-after-power-on.txt").contains("byte 1"))
    }

    @Test(arguments: LabScenario.boundingSystems) func theDisconnectFaultDropsTheCentralsLink(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let central = read(run, "central-hang-up.txt")
        #expect(central.contains("hang-up read 01\n"), "\(central)")
        #expect(central.contains("link dropped by the peripheral"), "\(central)\n\(tails(run, ["blemu-run.log"]))")
        #expect(events(run).contains { $0["type"] as? String == "fault" && $0["fault"] as? String == "disconnect" })
        #expect(read(run, "blemu-run.log").contains("fault disconnect: dropped /org/bluez/hci0/dev_"))
        // BlueZ 5.83+ says why (Device1.Disconnected): blemu asked bluetoothd to drop the link, so the local host
        // ended it. Before 5.83 the line carries no reason.
        let disconnects = events(run).filter { $0["type"] as? String == "disconnected" }
        #expect(!disconnects.isEmpty, "\(tails(run, ["events.jsonl"]))")
        if system.bluez.isAtLeast("5.83") {
            #expect(
                disconnects.contains { $0["reason"] as? String == "Local" }
                    && disconnects.allSatisfy { $0["reason"] is String && $0["message"] is String },
                "\(disconnects)")
        } else {
            #expect(disconnects.allSatisfy { $0["reason"] == nil }, "\(disconnects)")
        }
    }

    @Test(arguments: LabScenario.boundingSystems) func everyRequestWasAnsweredOnceAndBlemuStopsCleanly(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let counters = read(run, "ctl-counters.json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(counters.utf8)) as? [String: Any])
        let counts = try #require(object["counters"] as? [String: Any], "\(counters)")
        let requests = try #require(counts["requests"] as? Int, "\(counters)")
        // A marker read per central run of the first blemu (five), one hang-up read: each answered, each answer
        // one request line.
        #expect(requests == 6 && counts["answered"] as? Int == requests, "\(counters)")
        let answered = events(run).filter { $0["type"] as? String == "request" }
        #expect(answered.count == requests, "\(tails(run, ["events.jsonl"]))")
        #expect(read(run, "blemu-run-rc").trimmingCharacters(in: .whitespacesAndNewlines) == "0", "SIGTERM exits 0")
    }

    /// What 5.66 does when blemu dies under a subscribed central (bluetoothd's own GATT client on hci1): the link
    /// stays, the services go and come back (Service Changed) under new handles, and nobody subscribes to the new
    /// run by itself. So the second run reports the saved subscription as history and has no subscriber.
    @Test(arguments: LabScenario.boundingSystems)
    func aCentralSubscribedAcrossABlemuCrashStaysConnectedButMustSubscribeAgain(
        system: LabSystem
    ) async throws {
        let run = try await finishedRun(system)
        let hold = read(run, "central-hold.txt")
        #expect(hold.contains("value 11\n"), "the first run notified: \(hold)")
        #expect(read(run, "ctl-centrals-1.json").contains("\"beat\""))
        #expect(read(run, "hold-connected-after-restart.txt").contains("boolean true"), "the link survived blemu")
        #expect(hold.contains("beat object gone"), "Service Changed removed the old characteristic: \(hold)")
        #expect(hold.contains("notifying False"), "its successor is not subscribed: \(hold)")
        #expect(read(run, "resubscribed.txt") == "no\n", "no AcquireNotify/StartNotify for the second run")
        #expect(read(run, "value-after-restart.txt") == "no\n", "a value set on the second run reaches nobody")
        let log = read(run, "blemu-run-2.log")
        #expect(
            log.contains("saved subscription(s) not re-established: beat (*)"), "\(tails(run, ["blemu-run-2.log"]))")
    }

    @Test(arguments: LabScenario.boundingSystems) func timingsAreRecorded(system: LabSystem) async throws {
        let run = try await LifecycleScenario.shared.run(on: system)
        print(
            "lifecycle lab: qemu start to command \(run.untilCommand.map(LabMachine.seconds) ?? "?"), "
                + "total \(LabMachine.seconds(run.total))")
        print(read(run, "scenario-steps"))
        #expect(run.total > .zero)
    }
}
