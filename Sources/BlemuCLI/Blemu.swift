import ArgumentParser
import Serving

/// The `blemu` command: a BlueZ peripheral emulator (started by main.swift).
struct Blemu: AsyncParsableCommand {
    /// blemu's version: `blemu --version`, and the Python package's (python/pyproject.toml; a test keeps them equal).
    static let version = BuildRevision.version

    static let configuration = CommandConfiguration(
        commandName: "blemu",
        abstract: "Make a BlueZ machine behave like a Bluetooth Low Energy peripheral.",
        discussion: """
            Exit codes: 0 ok, 64 usage, 65 bad profile, 66 unreadable file, 69 BlueZ or adapter unavailable.
            """,
        version: BuildRevision.versionLine(version),
        subcommands: [
            ValidateCommand.self, ShowCommand.self, AdvCommand.self, RunCommand.self, LabCommand.self,
            ProbeCommand.self, CloneCommand.self, VerifyCommand.self, CtlCommand.self, UICommand.self,
            McpCommand.self, DoctorCommand.self,
        ])

    /// The one-line usage error for `word` as the first argument when it is neither an option nor one of blemu's
    /// commands (`help` included); nil when ArgumentParser should parse the line.
    static func unknownCommand(_ word: String) -> String? {
        let names = configuration.subcommands.compactMap { $0.configuration.commandName }
        guard !word.hasPrefix("-"), word != "help", !names.contains(word) else { return nil }
        let commands = names.sorted().joined(separator: ", ")
        return "Error: '\(word)' is not a blemu command (\(commands)); see 'blemu --help'."
    }
}
