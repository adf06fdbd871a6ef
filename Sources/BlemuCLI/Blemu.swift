import ArgumentParser

/// The `blemu` command: a BlueZ peripheral emulator (started by main.swift).
struct Blemu: AsyncParsableCommand {
    /// blemu's version: `blemu --version`, and the Python package's (python/pyproject.toml; a test keeps them equal).
    static let version = "0.4.0"

    static let configuration = CommandConfiguration(
        commandName: "blemu",
        abstract: "Make a BlueZ machine behave like a Bluetooth Low Energy peripheral.",
        discussion: """
            Exit codes: 0 ok, 64 usage, 65 bad profile, 66 unreadable file, 69 BlueZ or adapter unavailable.
            """,
        version: BuildRevision.versionLine(version),
        subcommands: [
            ValidateCommand.self, ShowCommand.self, AdvCommand.self, RunCommand.self, LabCommand.self,
            ProbeCommand.self, CloneCommand.self, CtlCommand.self, DoctorCommand.self,
        ])
}
