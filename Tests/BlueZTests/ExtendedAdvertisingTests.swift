import BlueZTesting
import DBus
import Foundation
import GATTModel
import Peripheral
import Testing

@testable import BlueZ

/// Extended advertising against the fake bluetoothd: the backend asks the adapter what it can send
/// before registering, registers `SecondaryChannel: 1M`, and turns each refusal into one line naming the fix. The
/// fake is 5.66, so the data cap it keeps is 5.66's; the lab shows 5.82 sending what 5.66 refuses.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"), .serialized, .timeLimit(.minutes(1)))
struct ExtendedAdvertisingTests {
    static func advertisement(manufacturer: Int) -> Advertisement {
        Advertisement(
            localName: "Extended",
            manufacturerData: [ManufacturerData(companyID: 0xFFFF, data: .init(repeating: 7, count: manufacturer))],
            mode: .extended)
    }

    /// The backend's error inside the manager's, or nil.
    private func refusal(_ advertisement: Advertisement, on rig: BackendRig) async -> BlueZError? {
        do {
            try await rig.manager.startAdvertising(advertisement)
            return nil
        } catch .backendFailed(let failure) {
            return failure.error as? BlueZError
        } catch {
            return nil
        }
    }

    /// Why the backend found extended advertising unavailable; any other outcome fails the test.
    private func unavailability(_ advertisement: Advertisement, on rig: BackendRig) async throws -> String {
        let error = await refusal(advertisement, on: rig)
        guard case .extendedAdvertisingUnavailable(let why)? = error else {
            throw ExpectedRefusal(
                description: "expected extendedAdvertisingUnavailable, got \(String(describing: error))")
        }
        return why
    }

    private struct ExpectedRefusal: Error, CustomStringConvertible { var description: String }

    @Test func aControllerWithoutExtendedAdvertisingIsToldBeforeAnythingIsRegistered() async throws {
        let rig = try await BackendRig(HeartRate.service, hasExtendedAdvertising: false)
        let why = try await unavailability(Self.advertisement(manufacturer: 100), on: rig)
        #expect(why.contains("SupportedSecondaryChannels") && why.contains("`mode: legacy`"), "\(why)")
        #expect(await rig.fake.advertisementRegistrations == 0)
        #expect(await !rig.manager.isAdvertising)
        await rig.stop()
    }

    @Test func bluetoothd566RefusingMoreThan31BytesIsToldWhichBlueZSendsIt() async throws {
        // A Bluetooth 5 controller (SupportedSecondaryChannels, MaxAdvLen 251) under 5.66, which still caps each
        // manufacturer data entry at 27 bytes.
        let rig = try await BackendRig(HeartRate.service, hasExtendedAdvertising: true)
        let why = try await unavailability(Self.advertisement(manufacturer: 100), on: rig)
        #expect(why.contains("BlueZ before 5.69") && why.contains("BlueZ >= 5.69"), "\(why)")
        #expect(why.contains("bluetoothd refused 117 bytes"), "\(why)")  // 104 + 10 (name) + 3 (Flags)
        #expect(await rig.fake.advertisementRegistrations == 0)
        // Nothing half-registered: a legacy advertisement afterwards registers as usual.
        try await rig.manager.startAdvertising(Advertisement(localName: "HR", serviceUUIDs: [BluetoothUUID(0x180D)]))
        #expect(await rig.fake.advertisementRegistrations == 1)
        await rig.stop()
    }

    @Test func anExtendedAdvertisementIsRegisteredOnTheSecondaryChannelWithItsNameInTheData() async throws {
        let rig = try await BackendRig(HeartRate.service, hasExtendedAdvertising: true)
        try await rig.manager.startAdvertising(Self.advertisement(manufacturer: 20))
        let properties = try #require(await rig.fake.advertisementProperties.values.first)
        #expect(try properties["SecondaryChannel"]?.asString() == "1M")
        #expect(try properties["LocalName"]?.asString() == "Extended")
        #expect(await rig.manager.isAdvertising)
        await rig.stop()
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ChildProcess.blemu), "needs the built blemu"))
    func blemuRunExits69WithOneLineNamingTheFix() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeBluetoothd(busAddress: bus.address)
        let directory = "/tmp/blemu-extended-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let profile = ChildProcess.repositoryRoot + "/Tests/LabTests/Fixtures/lab-extended.yaml"
        let run = try ChildProcess(ChildProcess.blemu, ["run", profile, "--bus", bus.address], outputIn: directory)
        #expect(await run.exitStatus() == 69, "\(run.stderr)")
        // Beside the profile's warning and the info log, the refusal: one `blemu:` line, with the fix.
        let lines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("blemu: ") }
        #expect(lines.count == 1, "\(run.stderr)")
        #expect(lines.first?.contains("SupportedSecondaryChannels") == true, "\(run.stderr)")
        #expect(lines.first?.contains("`mode: legacy`") == true, "\(run.stderr)")
        #expect(await fake.advertisementRegistrations == 0)
        await fake.stop()
        bus.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
