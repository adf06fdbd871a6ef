import Foundation
import Testing

@testable import Lab

/// The lab's `sitecustomize` run by the host's python3 against a stand-in for bleak 3.1's BlueZ manager (the same
/// attributes: `_adapters`, `_properties`, `get_default_adapter`); the heart-rate lab scenario checks the real bleak.
struct BleakDefaultAdapterTests {
    /// Runs `driver` with the shim, the stand-in bleak and a shadowed sitecustomize on PYTHONPATH, in that order.
    private func python(_ driver: String, central: String?) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("bleak-shim-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let manager = """
            class BlueZManager:
                def __init__(self, central_powered):
                    self._adapters = {"/org/bluez/hci0", "/org/bluez/hci1"}
                    self._properties = {
                        "/org/bluez/hci0": {"org.bluez.Adapter1": {"Powered": True}},
                        "/org/bluez/hci1": {"org.bluez.Adapter1": {"Powered": central_powered}},
                    }

                def get_default_adapter(self):
                    return "/org/bluez/hci0"

            """
        let files = [
            "shim/sitecustomize.py": BleakDefaultAdapter.source,
            "fake/bleak/__init__.py": "", "fake/bleak/backends/__init__.py": "",
            "fake/bleak/backends/bluezdbus/__init__.py": "", "fake/bleak/backends/bluezdbus/manager.py": manager,
            "other/sitecustomize.py": "print('shadowed sitecustomize ran')\n",
        ]
        for (path, text) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        var environment = ["PYTHONPATH": ["shim", "fake", "other"].map { root.path + "/" + $0 }.joined(separator: ":")]
        environment["BLEMU_LAB_CENTRAL"] = central
        return try ChildProcess.run(["/usr/bin/python3", "-c", driver], environment: environment, keepingStderr: true)
            .output
    }

    private let driver = """
        from bleak.backends.bluezdbus.manager import BlueZManager
        print(BlueZManager(True).get_default_adapter(), BlueZManager(False).get_default_adapter())
        """

    @Test func bleakDefaultsToThePoweredCentralAndOtherwiseKeepsItsOwnChoice() throws {
        let output = try python(driver, central: "hci1")
        #expect(output.contains("/org/bluez/hci1 /org/bluez/hci0\n"), "\(output)")
        #expect(output.hasPrefix("shadowed sitecustomize ran\n"), "\(output)")
    }

    @Test func outsideTheLabBleakIsUntouched() throws {
        let output = try python(driver, central: nil)
        #expect(output.contains("/org/bluez/hci0 /org/bluez/hci0\n"), "\(output)")
    }
}
