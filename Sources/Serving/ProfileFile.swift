import BlueZModel
import Emulation
import GATTProfile
import LocalIO
import Peripheral

/// A profile file as the commands take it: read and decoded with its diagnostics on stderr, planned, and checked as
/// `blemu run` would build its behaviour; every failure said in one line and thrown as its exit status.
public enum ProfileFile {
    /// The decoded profile. Throws `.noInput` for an unreadable file and `.badProfile` for one with errors, after
    /// printing the diagnostics (warnings are printed too).
    public static func load(_ path: String) throws(ExitStatus) -> PeripheralProfile {
        guard LocalFile.isReadable(path) else {
            Console.error("blemu: cannot read \(path)")
            throw .noInput
        }
        let result = BlueZProfileCheck.checked(ProfileLoader.load(path: path))
        if !result.diagnostics.isEmpty { Console.error(result.renderedDiagnostics) }
        guard !result.hasErrors, let profile = result.profile else { throw .badProfile }
        return profile
    }

    /// The advertising plan, or `.badProfile` when the advertisement cannot be laid out.
    public static func plan(_ profile: PeripheralProfile, file: String) throws(ExitStatus) -> AdvertisingPlan {
        do {
            return try AdvertisingPlanner.plan(profile.advertisement)
        } catch {
            Console.error("\(file): error: \(error)")
            throw .badProfile
        }
    }

    /// Loads the profile and checks that it would run (`runProblem`).
    public static func check(_ path: String) throws(ExitStatus) {
        let profile = try load(path)
        if let problem = runProblem(profile, file: path) {
            Console.error(problem)
            throw .badProfile
        }
    }

    /// What stops a decoded profile from running, beyond its YAML: an advertisement that cannot be laid out, or a
    /// behaviour that cannot be built (a replay file missing, a schedule's value too long). Nil when it would run.
    public static func runProblem(_ profile: PeripheralProfile, file: String) -> String? {
        do {
            _ = try AdvertisingPlanner.plan(profile.advertisement)
        } catch {
            return "\(file): error: \(error)"
        }
        do {
            _ = try Emulator(
                profile: profile, server: ProfileServer(), baseDirectory: LocalFile.split(file).directory,
                eventLog: nil, stateStore: nil)
        } catch {
            return "\(file): error: \(error)"
        }
        return nil
    }
}
