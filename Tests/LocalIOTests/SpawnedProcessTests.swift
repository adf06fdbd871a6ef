import Foundation
import LocalIO
import Testing

/// `SpawnedProcess` and `ProcessSpawn`: the one way blemu starts a child, as a shell would, and the one way it waits
/// for one. Real children (/bin/sh), real signals.
@Suite struct SpawnedProcessTests {
    @Test func aChildsOutputAndExitStatusComeBackAndItsEnvironmentHasTheAdditions() throws {
        let (status, output) = try SpawnedProcess.run(
            ["/bin/sh", "-c", "printf '%s' \"$BLEMU_TEST\"; exit 3"], environment: ["BLEMU_TEST": "added"])
        #expect(status == 3)
        #expect(String(decoding: output, as: UTF8.self) == "added")
    }

    @Test func stdinIsEmptyAndStdoutCanJoinStderrWhereverItGoes() throws {
        let path = NSTemporaryDirectory() + "blemu-spawn-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(file) }
        // stdin is /dev/null, so `cat` ends at once; stdout follows stderr into the file.
        let child = try SpawnedProcess.start(
            ["/bin/sh", "-c", "cat; echo out; echo err >&2"], standardOutput: .standardError,
            standardError: .descriptor(file))
        #expect(child.wait() == 0)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "out\nerr\n")
        let (_, discarded) = try SpawnedProcess.run(["/bin/sh", "-c", "echo out; echo err >&2"])
        #expect(String(decoding: discarded, as: UTF8.self) == "out\n")
    }

    @Test func aProgramHeldOpenForWritingIsRetriedThenRefusedWithTheKernelsReason() throws {
        let path = NSTemporaryDirectory() + "blemu-busy-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Held open for writing the whole time, as a writer that never lets go: ETXTBSY on every try.
        let writer = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        #expect(write(writer, "#!/bin/sh\nexit 0\n", 17) == 17)
        #expect {
            try SpawnedProcess.start([path])
        } throws: {
            ($0 as? ProcessSpawn.SpawnError)?.description == "Text file busy"
        }
        close(writer)
        // Once nobody writes it, it runs.
        #expect(try SpawnedProcess.start([path]).wait() == 0)
    }

    @Test func aChildKilledByASignalReportsItAsAShellDoes() throws {
        let (status, _) = try SpawnedProcess.run(["/bin/sh", "-c", "kill -TERM $$"])
        #expect(status == 128 + SIGTERM)
    }

    @Test func aChildThatWritesPastTheLimitIsCutOffNotWaitedForForever() throws {
        // `yes` writes until its stdout closes: the read stops at the limit, the pipe closes, SIGPIPE ends it.
        let (status, output) = try SpawnedProcess.run(["/usr/bin/yes"], readingAtMost: 4096)
        #expect(output.count == 4096)
        #expect(Array(output.prefix(4)) == Array("y\ny\n".utf8))
        #expect(status == 128 + SIGPIPE)
    }

    @Test func aMissingProgramIsTheSystemsReasonNotACrash() {
        #expect(throws: ProcessSpawn.SpawnError.self) { try SpawnedProcess.run(["/nonexistent/blemu-test"]) }
    }

    @Test func signalsStartUnblockedAtTheirDefaultsAndTheChildLeadsItsOwnGroup() throws {
        // This thread blocks SIGTERM for the test (a mask is per thread, so no other test sees it); a child must not
        // inherit that, as children of libdispatch's workers would.
        var blocked = sigset_t()
        var saved = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        let (_, output) = try SpawnedProcess.run(
            ["/bin/sh", "-c", "grep -E '^(SigBlk|SigIgn):' /proc/self/status; ps -o pgid= -p $$; echo $$"])
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map { $0.trimmingWhitespace() }
        let mask = { (name: String) in
            lines.first { $0.hasPrefix(name + ":") }.flatMap {
                UInt64($0.dropFirst(name.count + 1).trimmingWhitespace(), radix: 16)
            }
        }
        let term = UInt64(1) << (UInt64(SIGTERM) - 1)
        #expect(mask("SigBlk") == 0, "\(lines)")
        #expect(mask("SigIgn").map { $0 & term == 0 } == true, "\(lines)")
        #expect(lines.count == 4 && lines[2] == lines[3], "the child's group is its own pid: \(lines)")
    }

    @Test func noDescriptorOfTheParentsReachesTheChild() throws {
        let fd = open("/dev/null", O_RDONLY)  // not close-on-exec
        defer { close(fd) }
        let (_, output) = try SpawnedProcess.run(["/bin/sh", "-c", "ls /proc/self/fd"])
        let open = String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        #expect(!open.contains(fd), "\(open)")
    }

    @Test func aWaitWithinALimitReturnsNilWhileTheChildRunsAndStopEndsIt() throws {
        // The child ignores SIGTERM itself, so only the SIGKILL after the grace ends it.
        let child = try SpawnedProcess.start(["/bin/sh", "-c", "trap '' TERM; while :; do sleep 1; done"])
        #expect(child.isRunning)
        #expect(child.wait(within: .milliseconds(50)) == nil)
        #expect(child.stop(grace: .milliseconds(100)) == 128 + SIGKILL)
        #expect(!child.isRunning)
        #expect(child.status == 128 + SIGKILL)
        // Reaped: a signal now cannot reach a process that reused the pid.
        child.signal(SIGKILL)
        #expect(child.wait() == 128 + SIGKILL)
    }

    @Test func stopKillsWhatTheChildStartedWhenItOutlastsTheGrace() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        // The child and the sleep it starts both ignore SIGTERM and both hold the pipe's write end: the pipe reads
        // its end of file only once both are gone.
        let child = try SpawnedProcess.start(
            ["/bin/sh", "-c", "trap '' TERM; sleep 600 & echo; wait"], standardOutput: .descriptor(ends[1]))
        close(ends[1])
        // Its line says the trap is set and the sleep started.
        var byte: UInt8 = 0
        #expect(read(ends[0], &byte, 1) == 1)
        #expect(child.stop(grace: .milliseconds(100)) == 128 + SIGKILL)
        var watched = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        // At most 10 s for the end of file; with the sleep still alive it never comes (and a read would block).
        guard poll(&watched, 1, 10_000) == 1 else {
            Issue.record("the child's sleep outlived it, holding the pipe")
            return
        }
        #expect(read(ends[0], &byte, 1) == 0)
    }

    @Test func aChildThatEndsOnTermIsStoppedWithoutTheKill() throws {
        let child = try SpawnedProcess.start(["/bin/sleep", "60"])
        #expect(child.stop(grace: .seconds(30)) == 128 + SIGTERM)
    }
}
