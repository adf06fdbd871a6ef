import BlueZTesting
import Foundation
import Testing

/// A real `blemu run` of the heart-rate profile against the fake bluetoothd on a private bus: what the suites that
/// drive the process (and tools beside it) start from.
protocol BlemuRunRig {}

extension BlemuRunRig {
    /// A private bus with the fake bluetoothd on it, and a fresh directory for a run's files.
    func rig() async throws -> (bus: PrivateBus, fake: FakeBluetoothd, directory: String) {
        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address)
        let directory = "/tmp/blemu-run-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return (bus, fake, directory)
    }

    /// `blemu run` of the heart-rate profile on `bus` with `options`, awaited until it says it advertises (on
    /// stdout, or stderr when stdout carries the event log).
    func heartRate(
        on bus: PrivateBus, _ options: [String], in directory: String, saysOnStderr: Bool = false
    ) async throws -> ChildProcess {
        let run = try ChildProcess(
            ChildProcess.blemu,
            ["run", ChildProcess.repositoryRoot + "/profiles/heart-rate.yaml", "--bus", bus.address] + options,
            outputIn: directory)
        let isAdvertising = await FileWait.until(
            saysOnStderr ? run.stderrPath : run.stdoutPath, contains: "advertising \"", within: .seconds(30))
        try #require(isAdvertising, "blemu run did not advertise:\n\(run.stdout)\n\(run.stderr)")
        return run
    }

    /// `heartRate` with a control socket and an event log in `directory`, as most stories here steer it.
    func steerableHeartRate(
        on bus: PrivateBus, in directory: String
    ) async throws -> (run: ChildProcess, control: String, events: String) {
        let control = directory + "/control.sock"
        let events = directory + "/events.jsonl"
        let run = try await heartRate(on: bus, ["--control", control, "--events", events], in: directory)
        return (run, control, events)
    }
}
