import Foundation

/// Runs the built `blemu` executable, which sits next to the test bundle in the build products directory.
struct BlemuProcess {
    /// What a run printed and how it ended.
    struct Outcome {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("blemu")

    /// Runs blemu with `arguments` from the repository root and waits for it.
    static func run(_ arguments: String...) async throws -> Outcome { try await run(arguments) }

    /// Runs blemu with `arguments` from the repository root and waits for it on a thread of its own: a test blocked
    /// on a child would hold one of the cooperative pool's two threads (on a 2-core machine), and tests running
    /// beside it whose handlers need the pool (a D-Bus callback answered within its timeout) would starve.
    /// With `environment`, those variables are set over this process's own; with `executable`, that program runs
    /// with `arguments` instead of blemu (a wrapper such as unshare, which names blemu itself).
    static func run(
        _ arguments: [String], environment: [String: String] = [:], executable: String? = nil
    ) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result { try runBlocking(arguments, environment: environment, executable: executable) })
            }
            .start()
        }
    }

    private static func runBlocking(
        _ arguments: [String], environment: [String: String], executable program: String?
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = program.map { URL(fileURLWithPath: $0) } ?? executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.currentDirectoryURL = repositoryRoot
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes to the end before waiting, so a large output cannot block the child.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Every bundled profile, relative to the repository root.
    static var bundledProfiles: [String] {
        let names =
            (try? FileManager.default.contentsOfDirectory(
                atPath: repositoryRoot.appendingPathComponent("profiles").path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().map { "profiles/\($0)" }
    }
}
