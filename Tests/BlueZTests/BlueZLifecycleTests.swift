import Peripheral
import Testing

@testable import BlueZ

/// The lifecycle against bluetoothd as a machine, with no bus: every order of events the lab has shown
/// (docs/bluez.md, "Links, power and restarts").
@Suite struct BlueZLifecycleTests {
    /// A machine with bluetoothd up, the adapter powered, and agent, application and advertisement registered.
    func serving() -> BlueZLifecycle {
        var machine = BlueZLifecycle(adapterPowered: true)
        _ = machine.handle(.want(.application))
        _ = machine.handle(.want(.advertisement))
        for registration in BlueZLifecycle.Registration.allCases {
            #expect(machine.handle(.registered(registration, generation: machine.generation)) == [])
        }
        #expect(machine.missing.isEmpty)
        return machine
    }

    /// Registers everything missing, as the backend's pass does.
    func registerMissing(_ machine: inout BlueZLifecycle) {
        let generation = machine.generation
        for registration in machine.missing { _ = machine.handle(.registered(registration, generation: generation)) }
    }

    @Test func aRestartLosesEveryRegistrationAndRegistersThemAgainInOrder() {
        var machine = serving()
        #expect(
            machine.handle(.bluetoothdLeft) == [
                .forgetLinks(reason: "bluetoothd left", bluetoothdChanged: true), .report(.resetting),
            ])
        #expect(machine.missing.isEmpty, "nothing can be registered with no bluetoothd")
        #expect(
            machine.handle(.bluetoothdArrived(adapterPowered: true)) == [.registerAgain(reason: "bluetoothd restarted")]
        )
        #expect(machine.missing == [.agent, .application, .advertisement])
        registerMissing(&machine)
        #expect(machine.missing.isEmpty)
        #expect(machine.reportedState == .poweredOn)
    }

    @Test func aNewBluetoothdAnnouncingItselfTwiceRegistersOnce() {
        var machine = serving()
        _ = machine.handle(.bluetoothdLeft)
        _ = machine.handle(.bluetoothdArrived(adapterPowered: true))
        registerMissing(&machine)
        // Then InterfacesAdded for the adapter, from the same new bluetoothd: a second pass with nothing to do.
        #expect(machine.handle(.adapterAdded(powered: true)) == [.registerAgain(reason: "adapter appeared")])
        #expect(machine.missing.isEmpty)
    }

    @Test func aReplyFromTheBluetoothdThatLeftRegistersNothing() {
        var machine = BlueZLifecycle(adapterPowered: true)
        _ = machine.handle(.want(.application))
        let stamp = machine.generation  // RegisterApplication sent to the old bluetoothd
        _ = machine.handle(.bluetoothdLeft)
        #expect(machine.handle(.registered(.application, generation: stamp)) == [])
        _ = machine.handle(.bluetoothdArrived(adapterPowered: true))
        #expect(machine.missing == [.agent, .application], "the new bluetoothd has not seen the application")
    }

    @Test func aPowerCycleKeepsRegistrationsAndRefreshesTheAdvertisement() {
        var machine = serving()
        #expect(
            machine.handle(.powered(false)) == [
                .forgetLinks(reason: "adapter powered off", bluetoothdChanged: false), .report(.poweredOff),
            ])
        #expect(machine.missing.isEmpty, "bluetoothd keeps registrations across power off")
        #expect(machine.handle(.powered(true)) == [.report(.poweredOn), .refreshAdvertisement])
        #expect(machine.handle(.powered(true)) == [], "a repeated Powered changes nothing")
    }

    @Test func powerOnWithoutAnAdvertisementRefreshesNothing() {
        var machine = BlueZLifecycle(adapterPowered: false)
        _ = machine.handle(.want(.application))
        #expect(machine.handle(.powered(true)) == [.report(.poweredOn)])
    }

    @Test func aRemovedAdapterIsUnsupportedUntilItReturns() {
        var machine = serving()
        #expect(
            machine.handle(.adapterRemoved) == [
                .forgetLinks(reason: "adapter removed", bluetoothdChanged: false), .report(.unsupported),
            ])
        #expect(machine.reportedState == .unsupported)
        #expect(machine.missing.isEmpty)
        #expect(machine.handle(.powered(true)) == [], "Powered of an adapter that is gone means nothing")
        #expect(machine.handle(.adapterAdded(powered: false)) == [.registerAgain(reason: "adapter appeared")])
        #expect(machine.missing == [.agent, .application, .advertisement])
        #expect(machine.reportedState == .poweredOff)
    }

    @Test func aNewBluetoothdWithoutTheAdapterIsUnsupported() {
        var machine = serving()
        _ = machine.handle(.bluetoothdLeft)
        #expect(machine.handle(.bluetoothdArrived(adapterPowered: nil)) == [.report(.unsupported)])
        #expect(machine.missing.isEmpty)
    }

    @Test func aReleasedAdvertisementIsMissingAgain() {
        var machine = serving()
        _ = machine.handle(.unregistered(.advertisement))
        #expect(machine.missing == [.advertisement])
    }

    @Test func afterShutdownNothingIsRegisteredAgain() {
        var machine = serving()
        #expect(machine.shutDown() == [.advertisement, .application, .agent], "unregistered in reverse order")
        #expect(machine.handle(.bluetoothdLeft) == [], "nothing is forgotten or reported after shutdown")
        #expect(machine.handle(.bluetoothdArrived(adapterPowered: true)) == [])
        #expect(machine.handle(.adapterAdded(powered: true)) == [])
        #expect(machine.missing.isEmpty)
        #expect(machine.handle(.registered(.application, generation: machine.generation)) == [])
        #expect(!machine.isRegistered(.application))
    }

    @Test func bluetoothdLeavingTwiceIsReportedOnce() {
        var machine = serving()
        _ = machine.handle(.bluetoothdLeft)
        #expect(machine.handle(.bluetoothdLeft) == [])
    }

    /// What is wanted changes only through the machine: a refused or stopped advertisement is not missing again
    /// after a restart, and one wanted while bluetoothd is gone is missing once it is back.
    @Test func wantingAndUnwantingGoThroughTheMachine() {
        var machine = serving()
        #expect(machine.handle(.unwant(.advertisement)) == [])
        _ = machine.handle(.unregistered(.advertisement))
        #expect(machine.missing.isEmpty, "an advertisement nobody wants is not missing")
        _ = machine.handle(.bluetoothdLeft)
        #expect(machine.reportedState == .resetting)
        #expect(machine.handle(.want(.advertisement)) == [])
        #expect(machine.missing.isEmpty, "nothing can be registered with no bluetoothd")
        _ = machine.handle(.bluetoothdArrived(adapterPowered: false))
        #expect(machine.missing == [.agent, .application, .advertisement])
        #expect(machine.adapterPowered == false)
    }

    @Test func aRemovedAdapterRemovedAgainForgetsNothingMore() {
        var machine = serving()
        _ = machine.handle(.adapterRemoved)
        let generation = machine.generation
        #expect(machine.handle(.adapterRemoved) == [])
        #expect(machine.generation == generation)
    }
}
