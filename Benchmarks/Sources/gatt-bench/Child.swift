import Glibc

/// A contender or helper process: started with posix_spawn, a cleared signal mask (this process's threads block
/// signals and a child would inherit that), extra environment variables, and its stdout and stderr in `log`.
final class Child: Sendable {
    let pid: pid_t
    let log: String
    let startedAt: UInt64

    init(_ arguments: [String], environment: [String: String] = [:], log: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var inherited: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = String(text.prefix { $0 != "=" })
            if environment[name] == nil { inherited.append(text) }
            index += 1
        }
        let pairs = inherited + environment.map { "\($0.key)=\($0.value)" }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        startedAt = monotonic()
        let status = posix_spawnp(&child, arguments[0], &actions, &attributes, &argv, &envp)
        guard status == 0 else {
            throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        pid = child
        self.log = log
    }

    /// Whether the process has exited (it is then reaped), with its status.
    func exitStatus() -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        return status
    }

    /// SIGTERM, then SIGKILL after two seconds; reaps the process.
    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<200 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
    }

    /// The peak resident set size in kB (`VmHWM` in /proc/PID/status), or nil when the process is gone.
    func peakRSS() -> Int? {
        guard let text = readText("/proc/\(pid)/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    /// The resident set size now in kB (`VmRSS`), or nil when the process is gone.
    func currentRSS() -> Int? {
        guard let text = readText("/proc/\(pid)/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    /// The last lines of the log, to say why a contender failed.
    func logTail(_ lines: Int = 6) -> String {
        let text = readText(log) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: " | ")
    }
}

func readText(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes.append(contentsOf: buffer[0..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}

func writeText(_ path: String, _ text: String) throws {
    guard let file = fopen(path, "w") else { throw BenchError("cannot write \(path)") }
    fputs(text, file)
    fclose(file)
}

/// Runs a shell command, its output on stderr, and returns its exit status.
func shell(_ command: String) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, 2, 1)
    var child: pid_t = 0
    let words: [String] = ["/bin/sh", "-c", command]
    var argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    guard posix_spawn(&child, "/bin/sh", &actions, nil, &argv, environ) == 0 else { throw BenchError("no /bin/sh") }
    var status: Int32 = 0
    waitpid(child, &status, 0)
    return (status >> 8) & 0xFF
}

/// A private dbus-daemon listening in `workspace` (fd passing on, as on the system bus), with its address.
func startBus(workspace: String) throws -> (address: String, child: Child) {
    let config = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=\(workspace)/bus</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    try writeText(workspace + "/bus.conf", config)
    let child = try Child(
        ["/usr/bin/dbus-daemon", "--config-file=\(workspace)/bus.conf", "--nofork", "--print-address=1"],
        log: workspace + "/bus.address")
    for _ in 0..<500 {
        // The address is the first line; a system-type daemon may warn on the same file after it (fd limits).
        if let text = readText(workspace + "/bus.address"), let line = text.split(separator: "\n").first,
            text.contains("\n"), line.hasPrefix("unix:")
        {
            return (String(line), child)
        }
        usleep(10_000)
    }
    child.stop()
    throw BenchError("dbus-daemon printed no address")
}

func monotonic() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func printError(_ text: String) { _ = (text + "\n").withCString { write(2, $0, strlen($0)) } }

/// CPU time of `pid` in nanoseconds: its process CPU clock (clock_getcpuclockid(3)), which counts every thread,
/// those that have exited too. Summing /proc/<pid>/task/*/schedstat instead drops a thread's time when it exits, so a
/// later reading could be smaller than an earlier one. 0 when the process is gone.
func cpuNanoseconds(of pid: pid_t) -> UInt64 {
    var clock = clockid_t()
    var now = timespec()
    guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &now) == 0 else { return 0 }
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// `later - earlier`, or 0 when `earlier` is the later one: a timestamp stored by another thread can be newer than
/// a clock read taken just before it was loaded, and unsigned subtraction would trap.
func nanoseconds(from earlier: UInt64, to later: UInt64) -> UInt64 {
    later > earlier ? later - earlier : 0
}
