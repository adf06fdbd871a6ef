import Foundation
import Testing

@testable import BlemuCLI

/// `blemu lab run` without a command: the probe line the VM runs, checked by letting sh expand it here.
struct LabDefaultCommandTests {
    @Test func theDefaultCommandProbesTheFirstPeripheralFromTheCentral() throws {
        // /bin/echo stands in for blemu (the VM exports where it sees blemu), so the test sees the argv the VM's
        // shell would build.
        let argv = LabCommand.Run.defaultProbe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        process.environment = [
            "BLEMU_LAB_BLEMU": "/bin/echo", "BLEMU_LAB_CENTRAL": "hci2",
            "BLEMU_LAB_PERIPHERAL_ADDRESS": "00:AA:01:00:00:00,00:AA:01:01:00:01",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(output == "probe --adapter hci2 00:AA:01:00:00:00\n")
    }
}
