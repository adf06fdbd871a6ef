#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu run --ui`: the live view (`blemu-live ui`) as a child of the serving process, started once the control
/// socket answers and stopped with the device. The view is a process of its own, so `blemu run` without `--ui` links
/// and costs nothing of it (its HTTP server, its page), and a view that fails leaves the device serving.
struct LiveViewProcess {
    /// The child's process id.
    let pid: pid_t

    /// Starts `blemu-live ui` for the device at `control`, listening on `listen`, with the event log `events` when it
    /// is a file. Its stdout goes to stderr when `quietStdout` (stdout carries the event log's lines). Returns nil,
    /// having said why, when it cannot start.
    static func start(control: String, listen: String, events: String?, quietStdout: Bool) -> LiveViewProcess? {
        guard let cli = Handover.locate(Handover.live) else {
            Console.error("blemu: --ui: blemu-live is not installed beside blemu; serving without the view")
            return nil
        }
        var arguments = [cli, "ui", "--control", control, "--listen", listen]
        if let events, events != "-" { arguments += ["--events", events] }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if quietStdout { posix_spawn_file_actions_adddup2(&actions, 2, 1) }
        // The serving process ignores the stop signals (it unregisters first) and SIGPIPE, and a child keeps ignored
        // signals across exec: the view starts with them at their defaults and no signal blocked, as a shell would
        // start it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        markCloseOnExec()
        var pointers = arguments.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        // The view watches this process (`Handover.liveParentVariable`): killed with SIGKILL, it cannot stop the view.
        var environment: [UnsafeMutablePointer<CChar>?] = [strdup("\(Handover.liveParentVariable)=\(getpid())")]
        var index = 0
        while let entry = environ[index] {
            if !String(cString: entry).hasPrefix(Handover.liveParentVariable + "=") {
                environment.append(strdup(entry))
            }
            index += 1
        }
        environment.append(nil)
        defer { for pointer in environment { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, cli, &actions, &attributes, &pointers, &environment)
        guard status == 0 else {
            Console.error(
                "blemu: --ui: cannot start \(cli): \(String(cString: strerror(status))); serving without the view")
            return nil
        }
        return LiveViewProcess(pid: pid)
    }

    /// Marks every descriptor above stderr close-on-exec, so the view holds nothing of the device's (its D-Bus
    /// connection, the sockets bluetoothd passed it, its control socket's): the fake-bluetoothd test found twelve
    /// sockets shared. posix_spawn's `addclosefrom_np` would say it in the child, but Glibc's Swift overlay does not
    /// have it; the flag is harmless to this process, which never execs.
    private static func markCloseOnExec() {
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let own = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name), fd > 2, fd != own else { continue }
            _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        }
    }

    /// Stops the view (SIGTERM: it closes its pages and exits) and waits for it, at most two seconds before SIGKILL.
    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<200 {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno != EINTR) { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }

    /// Where `blemu run --ui` puts a control socket when none is given: the user's runtime directory (private to the
    /// user) when there is one, else /tmp; named after the process, so two runs never share one.
    static func controlPath() -> String {
        let directory =
            getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return "\(directory)/blemu-\(getpid()).sock"
    }
}
