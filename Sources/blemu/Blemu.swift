import ArgumentParser

/// The `blemu` command: a BlueZ peripheral emulator.
@main
struct Blemu: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blemu",
        abstract: "Make a BlueZ machine behave like a Bluetooth Low Energy peripheral.",
        subcommands: [LabCommand.self])
}
