import ArgumentParser
import Logging

/// `--log-level`: one of swift-log's levels by name, refused by the parser (with the list) otherwise.
struct LogLevel: ExpressibleByArgument {
    /// The level.
    let level: Logger.Level

    /// A level given in code.
    init(_ level: Logger.Level) { self.level = level }

    /// The level a command line names; nil for any other word.
    init?(argument: String) {
        guard let level = Logger.Level(rawValue: argument) else { return nil }
        self.level = level
    }

    /// Every level, for `--help` and completions.
    static var allValueStrings: [String] { Logger.Level.allCases.map(\.rawValue) }

    /// How `--help` shows the default.
    var defaultValueDescription: String { level.rawValue }
}
