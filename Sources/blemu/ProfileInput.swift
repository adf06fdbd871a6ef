import ArgumentParser
import BlueZModel
import Emulation
import Foundation
import GATTModel
import GATTProfile
import Peripheral

/// Loads a profile for a command: prints its diagnostics to stderr and turns failures into sysexits codes.
enum ProfileInput {
    /// The profile at `path`, after printing its warnings; exits 66 if unreadable, 65 if it has errors.
    static func load(_ path: String) throws -> PeripheralProfile {
        guard FileManager.default.isReadableFile(atPath: path) else {
            Console.error("blemu: cannot read \(path)")
            throw ExitCode.noInput
        }
        let result = ProfileLoader.load(path: path)
        if !result.diagnostics.isEmpty { Console.error(result.renderedDiagnostics) }
        guard !result.hasErrors, let profile = result.profile else { throw ExitCode.badProfile }
        return profile
    }
}

extension ProfileInput {
    /// The profile's advertising plan; a layout the planner refuses is a profile error: printed, then exit 65.
    static func plan(_ profile: PeripheralProfile, file: String) throws -> AdvertisingPlan {
        do {
            return try AdvertisingPlanner.plan(profile.advertisement)
        } catch {
            Console.error("\(file): error: \(error)")
            throw ExitCode.badProfile
        }
    }
}

extension ProfileInput {
    /// Everything `blemu run` checks before it talks to bluetoothd: the profile, its advertising plan and its
    /// behaviour (schedules, write rules, replay files next to it). Diagnostics name `path` as given; exits 66 if
    /// unreadable, 65 on the first error.
    static func check(_ path: String) throws {
        let profile = try load(path)
        if let problem = runProblem(profile, file: path) {
            Console.error(problem)
            throw ExitCode.badProfile
        }
    }

    /// The first problem `blemu run` would meet with a loaded profile before talking to bluetoothd (an advertising
    /// plan the planner refuses, a behaviour that cannot be built), as a `file: error:` line; nil when none.
    static func runProblem(_ profile: PeripheralProfile, file: String) -> String? {
        do {
            _ = try AdvertisingPlanner.plan(profile.advertisement)
        } catch {
            return "\(file): error: \(error)"
        }
        do {
            _ = try Emulator(
                profile: profile, server: ProfileServer(),
                baseDirectory: URL(fileURLWithPath: file).deletingLastPathComponent().path, eventLog: nil,
                stateStore: nil)
        } catch {
            return "\(file): error: \(error)"
        }
        return nil
    }
}

/// Writes to the standard streams; diagnostics and messages go to stderr so stdout stays machine-readable.
enum Console {
    /// Writes a line to stderr.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Writes an Encodable value as pretty JSON with sorted keys to stdout.
    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
