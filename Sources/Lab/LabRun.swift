/// The outcome of a lab run that got as far as the command: its exit code, the controllers, where the logs are,
/// and how long each part took.
public struct LabRun: Sendable {
    /// One virtual controller as bluetoothd reported it.
    public struct Controller: Sendable, Equatable {
        /// The kernel's name for it: "hci0".
        public let name: String
        /// Its public address, as Adapter1.Address gives it: "00:AA:01:00:00:00"; empty when bluetoothd had none.
        public let address: String
    }

    /// One bring-up step, as the host saw it appear.
    public struct Step: Sendable, Equatable {
        /// The step's name in GuestStack's script: "dbus", "bluetoothd", "command"...
        public let name: String
        /// Time from qemu start until the host saw the step begin (the host polls every 0.1 s).
        public let sinceStart: Duration
        /// The VM's uptime when the step began, from /proc/uptime; nil when unreadable.
        public let guestUptime: Double?
    }

    /// The command's exit code; 127 when it was not found in the VM, 126 when not executable.
    public let exitCode: Int32
    /// The host directory holding every log (also the VM's work share).
    public let resultsDirectory: String
    /// Every virtual controller, hci0 first.
    public let controllers: [Controller]
    /// The controllers the peripherals use (hci0 ... when running profiles; hci0 for the command otherwise).
    public let peripherals: [String]
    /// The controller the command uses as its central.
    public let central: String
    /// The steps in order, ending with "command" and "power-off".
    public let steps: [Step]
    /// From qemu start to qemu exit.
    public let total: Duration
    /// The BlueZ that booted, as `bluetoothd --version` prints it: "5.66", "5.82".
    public let bluezVersion: String
    /// The kernel that booted, as `uname -r` said in the VM; nil when the VM did not write it.
    public var kernelRelease: String? = nil
    /// What `summary.json` holds, read once when the run ended; nil until `LabMachine` has read it.
    public internal(set) var summary: LabSummary? = nil

    /// From qemu start until the command began; nil when the step was not seen.
    public var untilCommand: Duration? { steps.first { $0.name == "command" }?.sinceStart }

    /// The path of a file in the results directory: `file("command.log")`.
    public func file(_ name: String) -> String { resultsDirectory + "/" + name }

    /// The address of controller `name`; nil when there is no such controller.
    public func address(of name: String) -> String? { controllers.first { $0.name == name }?.address }
}
