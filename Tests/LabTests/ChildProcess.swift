import Foundation

/// A program the lab tests run to its end on this machine: the shell with a generated script, python with a fixture,
/// the host's blemu. One runner, so each caller says only what differs: the arguments, the environment, and whether
/// stderr joins stdout or is dropped.
struct ChildProcess {
    /// Its exit status and what it printed.
    struct Outcome {
        let status: Int32
        let output: String
    }

    /// `arguments[0]` with the rest as its arguments, to its end; `environment` replaces the inherited one when
    /// given. Throws only when it cannot be started.
    static func run(
        _ arguments: [String], environment: [String: String]? = nil, keepingStderr: Bool = false
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = keepingStderr ? output : FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read to the end before waiting: a child that fills the pipe would otherwise never exit.
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: text)
    }

    /// `run` off the cooperative pool, for a program that takes minutes (a browser, a central), so it holds none of
    /// the pool's few threads while the other suites' tasks wait.
    static func finish(_ arguments: [String], keepingStderr: Bool = false) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try run(arguments, keepingStderr: keepingStderr) })
            }
        }
    }
}
