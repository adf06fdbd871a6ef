import DBus
import Testing

@testable import ProbeCentral

/// Which of bluetoothd's Device1 objects a probe request names.
struct DeviceMatcherTests {
    private let adapter: ObjectPath = "/org/bluez/hci1"

    private func device(name: String) -> [String: [String: DBusValue]] {
        [
            "org.bluez.Device1": [
                "Adapter": .objectPath(adapter), "Address": .string("00:AA:01:00:00:00"), "Name": .string(name),
            ]
        ]
    }

    /// bluetoothd 5.84+ reports a name advertised as "Lab Cases " as "Lab Cases"; either spelling finds either.
    @Test func namesMatchWithoutTheSpacesAroundThem() {
        let path: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
        let spaced = BlueZCentral.matcher(for: ProbeRequest(name: "Lab Cases "), adapter: adapter)
        let plain = BlueZCentral.matcher(for: ProbeRequest(name: "Lab Cases"), adapter: adapter)
        #expect(spaced(path, device(name: "Lab Cases")))
        #expect(plain(path, device(name: "Lab Cases ")))
        #expect(!plain(path, device(name: "Lab  Cases")))
        #expect(!plain(path, device(name: "Lab Case")))
        #expect(
            !BlueZCentral.matcher(for: ProbeRequest(name: "Lab Cases"), adapter: "/org/bluez/hci0")(
                path, device(name: "Lab Cases")))
    }
}
