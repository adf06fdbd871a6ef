import BlueZ
import BlueZModel
import DBus
import GATTModel
import Peripheral
import Serving
import Testing

@testable import BlemuCLI

/// `blemu run`'s exit code when publishing or advertising fails comes from the stack's typed error, which
/// `PeripheralError.backendFailed` now carries whole.
struct RunExitCodeTests {
    @Test func anAdvertisementThatCannotBeLaidOutIsTheProfilesFault() {
        let error = PeripheralError.backendFailed(
            BackendFailure(BlueZError.invalidAdvertisement(.localNameContainsNUL)))
        #expect(DeviceRun.exitStatus(for: error) == .badProfile)
    }

    @Test func anObjectTreeWeCouldNotExportIsOurs() {
        let error = PeripheralError.backendFailed(BackendFailure(BlueZError.export("duplicate path")))
        #expect(DeviceRun.exitStatus(for: error) == .software)
    }

    @Test func whatBluetoothdRefusesIsTheServicesFault() {
        let refusal = BlueZError.rejected(
            operation: "RegisterAdvertisement", DBusError(name: "org.bluez.Error.Failed", message: "Failed"))
        #expect(DeviceRun.exitStatus(for: PeripheralError.backendFailed(BackendFailure(refusal))) == .unavailable)
        #expect(DeviceRun.exitStatus(for: PeripheralError.notPoweredOn(.poweredOff)) == .unavailable)
    }

    @Test func theWrappedErrorKeepsItsTypeAndItsWords() throws {
        let failure = BackendFailure(BlueZError.shutDown)
        #expect(failure.error as? BlueZError == .shutDown)
        #expect(failure == BackendFailure(BlueZError.shutDown))
        #expect(
            "\(PeripheralError.backendFailed(failure))" == "the Bluetooth stack failed: the BlueZ backend is shut down")
    }
}
