import ArgumentParser
import FoundationEssentials
import GATTProfile
import Serving

/// `blemu validate FILE...`: every diagnostic of every profile.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check profiles and report every problem as file:line:col.",
        discussion: """
            Prints every error and warning of each file, with hints, then makes the checks `blemu run` makes \
            (the advertising plan, replay files): a file that validates starts. Exits 0 when no file has errors, \
            65 when any has, 66 when a file cannot be read.

            Example:
              blemu validate profiles/*.yaml
            """)

    @Argument(help: "Profile files (YAML).")
    var files: [String]

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("Give at least one profile file.") }
    }

    func run() throws {
        var worst: ExitCode = .success
        for file in files {
            guard FileManager.default.isReadableFile(atPath: file) else {
                Console.error("blemu: cannot read \(file)")
                if worst == .success { worst = .noInput }
                continue
            }
            let result = BlueZProfileCheck.checked(ProfileLoader.load(path: file))
            if !result.diagnostics.isEmpty { Console.error(result.renderedDiagnostics) }
            var errors = result.diagnostics.filter { $0.severity == .error }.count
            let warnings = result.diagnostics.count - errors
            // What `blemu run` and `blemu adv` check beyond the file itself: the advertising plan and the
            // behaviour (replay files next to the profile), so `validate` passing means `run` will start.
            if errors == 0, let profile = result.profile, let problem = ProfileFile.runProblem(profile, file: file) {
                Console.error(problem)
                errors += 1
            }
            let counts = "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")"
            print("\(file): \(errors == 0 ? "ok" : "invalid") (\(counts))")
            if errors > 0 { worst = .badProfile }
        }
        if worst != .success { throw worst }
    }
}
