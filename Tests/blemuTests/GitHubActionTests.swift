import Foundation
import Testing

/// The GitHub Action (action.yml) hands its inputs to scripts/lab-action as `INPUT_<NAME>` variables: the two files
/// must agree on the names, or a workflow's input would be dropped without a word. .ci/run runs the script for real
/// on the packages it builds; these check what it says before it installs anything.
@Suite struct GitHubActionTests {
    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: BlemuProcess.repositoryRoot.path + "/" + path, encoding: .utf8)
    }

    /// Every match of `pattern`'s first group in `text`.
    static func matches(_ pattern: String, in text: String) throws -> Set<String> {
        let expression = try NSRegularExpression(pattern: pattern, options: .anchorsMatchLines)
        return Set(
            expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                Range($0.range(at: 1), in: text).map { String(text[$0]) }
            })
    }

    /// Runs scripts/lab-action with exactly `environment` (and PATH) from the repository root, on a thread of its own.
    static func labAction(_ environment: [String: String]) async throws -> (status: Int32, stderr: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        let process = Process()
                        process.executableURL = URL(fileURLWithPath: "/bin/bash")
                        process.arguments = ["scripts/lab-action"]
                        process.currentDirectoryURL = BlemuProcess.repositoryRoot
                        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { mine, _ in mine }
                        let err = Pipe()
                        process.standardError = err
                        process.standardOutput = FileHandle.nullDevice
                        try process.run()
                        let stderr = err.fileHandleForReading.readDataToEndOfFile()
                        process.waitUntilExit()
                        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self))
                    })
            }.start()
        }
    }

    @Test func everyInputOfTheActionReachesTheScriptUnderItsName() throws {
        let action = try Self.read("action.yml")
        let declared = action.components(separatedBy: "\ninputs:\n").last?.components(separatedBy: "\nruns:").first
        let inputs = try Self.matches(#"^  ([a-z-]+):$"#, in: declared ?? "")
        let passed = try Self.matches(#"^        INPUT_([A-Z_]+): \$\{\{ inputs\.[a-z-]+ \}\}$"#, in: action)
        let mapped = try Self.matches(#"INPUT_([A-Z_]+): \$\{\{ inputs\.([a-z-]+) \}\}"#, in: action)
        let read = try Self.matches(#"\$\{?INPUT_([A-Z_]+)"#, in: try Self.read("scripts/lab-action"))
        #expect(inputs == ["profile", "command", "system", "requirements", "results", "packages"])
        #expect(Set(passed.map { $0.lowercased() }) == inputs, "action.yml passes \(passed), declares \(inputs)")
        #expect(mapped.count == inputs.count)
        #expect(read == passed, "lab-action reads \(read), action.yml passes \(passed)")
        #expect(action.contains(#"run: '"$GITHUB_ACTION_PATH/scripts/lab-action"'"#))
    }

    @Test func withoutAProfileOrACommandTheScriptSaysWhichAndExits64() async throws {
        let none = try await Self.labAction([:])
        #expect(none.status == 64)
        #expect(none.stderr.contains("INPUT_PROFILE and INPUT_COMMAND are required"), "\(none.stderr)")
        let noCommand = try await Self.labAction(["INPUT_PROFILE": "profiles/heart-rate.yaml"])
        #expect(noCommand.status == 64)
    }

    @Test func aPackagesDirectoryWithoutThePackagesIsRefusedBeforeAnythingIsInstalled() async throws {
        let empty = NSTemporaryDirectory() + "blemu-no-packages-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let outcome = try await Self.labAction([
            "INPUT_PROFILE": "profiles/heart-rate.yaml", "INPUT_COMMAND": "true", "INPUT_PACKAGES": empty,
        ])
        #expect(outcome.status == 66)
        #expect(outcome.stderr.contains("lab-action: no blemu_"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("_amd64.deb in \(empty)"), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("installing"))
    }
}
