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
        // stderr goes to a file, stdout to a pipe read to its end before the wait: with a pipe each, a child that
        // fills the stderr pipe while the stdout one is being read (a long run's log) would wait forever for us.
        let errorPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("blemu-test-stderr-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: errorPath, contents: nil),
            let errorFile = FileHandle(forWritingAtPath: errorPath)
        else { throw CocoaError(.fileWriteUnknown) }
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = errorFile
        do {
            try process.run()
        } catch {
            try? errorFile.close()
            throw error
        }
        try? errorFile.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderr = FileManager.default.contents(atPath: errorPath) ?? Data()
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
