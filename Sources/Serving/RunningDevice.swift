import BlueZ
import Emulation
import Peripheral

/// What `blemu run` started, stopped in one way whether it ends on a signal or on a failure half-way.
struct RunningDevice {
    let manager: PeripheralManager
    let emulator: Emulator
    let backend: BlueZBackend
    let eventLog: EventLog?
    let control: ControlServer?

    /// Closes the control socket, answers the requests a delay fault holds, stops the behaviour, unregisters from
    /// bluetoothd and closes the event log.
    func stop() async {
        control?.stop()
        // Requests a delay fault holds are answered now, while the application is still registered: left held,
        // bluetoothd would answer them itself after its timeout and `requests == answered` would not hold.
        emulator.releaseHeldRequests()
        _ = await manager.requestCounts(within: .seconds(2)) { $0.requests == $0.answered }
        await emulator.stop()
        await backend.shutdown()
        eventLog?.close()
    }
}
