import Testing

/// The tests' own runner: a child's stdout and stderr both arrive whole, however much it writes to either first.
struct BlemuProcessTests {
    // A limit, so that a runner that deadlocks again fails here instead of hanging the run.
    @Test(.timeLimit(.minutes(1))) func aChildThatFillsStderrBeforeWritingStdoutIsReadToItsEnd() async throws {
        // 1 MiB to stderr is far past a pipe's 64 KiB: read through a pipe while stdout was being read, it stalled the
        // child forever.
        let outcome = try await BlemuProcess.run(
            ["-c", "head -c 1048576 /dev/zero | tr '\\0' e >&2; echo done; exit 3"], executable: "/bin/sh")
        #expect(outcome.status == 3)
        #expect(outcome.stdout == "done\n")
        #expect(outcome.stderr.utf8.count == 1_048_576)
        #expect(outcome.stderr.allSatisfy { $0 == "e" })
    }
}
