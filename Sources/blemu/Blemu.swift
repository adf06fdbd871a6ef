import ArgumentParser

/// The `blemu` command: a BlueZ peripheral emulator.
@main
struct Blemu: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blemu",
        abstract: "Make a BlueZ machine behave like a Bluetooth Low Energy peripheral.",
        discussion: """
            Exit codes: 0 ok, 64 usage, 65 bad profile, 66 unreadable file, 69 BlueZ or adapter unavailable.
            """,
        subcommands: [
            ValidateCommand.self, ShowCommand.self, AdvCommand.self, LabCommand.self, ProbeCommand.self, RunCommand.self,
            CtlCommand.self,
        ])
}
