import Foundation
import Testing

@testable import Lab

/// How the lab starts RootCanal's binary, which needs a newer glibc than Debian 12's (docs/lab.md, "RootCanal's
/// air").
struct RootCanalGlibcTests {
    @Test func anOlderHostGlibcNeedsTheRuntimeAndIsToldHowToGetIt() throws {
        let missing = "/nonexistent/glibc-runtime"
        let problem = try #require(RootCanalInstall.glibcProblem(hostGlibc: (2, 36), runtime: missing))
        #expect(problem.contains("needs glibc 2.39, this host has 2.36"), "\(problem)")
        #expect(problem.contains("run scripts/fetch-glibc-runtime (or scripts/setup --lab)"), "\(problem)")
        #expect(RootCanalInstall.glibcProblem(hostGlibc: (2, 39), runtime: missing) == nil)
        #expect(RootCanalInstall.glibcProblem(hostGlibc: (2, 41), runtime: missing) == nil)
    }

    @Test func anUnpackedRuntimeIsEnoughAndRootCanalStartsThroughItsLoader() throws {
        let runtime = FileManager.default.temporaryDirectory.appendingPathComponent("glibc-\(UUID())").path
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        _ = FileManager.default.createFile(
            atPath: runtime + "/ld-linux-x86-64.so.2", contents: Data(), attributes: [.posixPermissions: 0o755])
        #expect(RootCanalInstall.glibcProblem(hostGlibc: (2, 36), runtime: runtime) == nil)
        #expect(
            RootCanalInstall.launch("/venv/rootcanal", glibcRuntime: runtime)
                == [runtime + "/ld-linux-x86-64.so.2", "--library-path", runtime, "/venv/rootcanal"])
        #expect(RootCanalInstall.launch("/venv/rootcanal", glibcRuntime: nil) == ["/venv/rootcanal"])
    }
}
