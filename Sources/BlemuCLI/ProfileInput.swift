import ArgumentParser
import BlueZModel
import FoundationEssentials
import GATTModel
import GATTProfile
import Serving

/// The commands' way to a profile: Serving's `ProfileFile` (shared with `blemu`, which serves), its exit status as
/// ArgumentParser's exit code.
enum ProfileInput {
    /// The decoded profile; `ExitCode.noInput` or `.badProfile` after saying why.
    static func load(_ path: String) throws(ExitCode) -> PeripheralProfile {
        do { return try ProfileFile.load(path) } catch { throw ExitCode(error) }
    }

    /// The advertising plan; `.badProfile` after saying why.
    static func plan(_ profile: PeripheralProfile, file: String) throws(ExitCode) -> AdvertisingPlan {
        do { return try ProfileFile.plan(profile, file: file) } catch { throw ExitCode(error) }
    }

    /// Loads the profile and checks that it would run.
    static func check(_ path: String) throws(ExitCode) {
        do { try ProfileFile.check(path) } catch { throw ExitCode(error) }
    }
}

extension Console {
    /// Prints a value as pretty JSON with sorted keys on stdout (`show --json`, `adv --json`).
    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
