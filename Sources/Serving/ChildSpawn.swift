#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts and stops the serving process's children (`blemu run --ui`'s view, `--handler`'s command) as a shell would
/// start them: stdin from /dev/null, the stop signals and SIGPIPE at their defaults and none blocked (the serving
/// process ignores them to unregister first, and a child keeps ignored signals across exec), holding none of the
/// device's descriptors, in a process group of its own so a stop reaches whatever the child started.
enum ChildSpawn {
    /// Starts `arguments` (the executable's path first) with `environment` replacing or adding those variables, its
    /// stdout on stderr when `stdoutToStderr`. Returns the process id, or the system's reason it could not start.
    static func start(
        _ arguments: [String], environment additions: [String: String], stdoutToStderr: Bool
    ) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if stdoutToStderr { posix_spawn_file_actions_adddup2(&actions, 2, 1) }
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
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
        markCloseOnExec()
        var pointers = arguments.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        var environment: [UnsafeMutablePointer<CChar>?] = additions.map { strdup("\($0.key)=\($0.value)") }
        var index = 0
        while let entry = environ[index] {
            let name = String(cString: entry).prefix { $0 != "=" }
            if additions[String(name)] == nil { environment.append(strdup(entry)) }
            index += 1
        }
        environment.append(nil)
        defer { for pointer in environment { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, &pointers, &environment)
        guard status == 0 else { return .failure(SpawnError(description: String(cString: strerror(status)))) }
        return .success(pid)
    }

    /// Why a child could not start: the system's words.
    struct SpawnError: Error, CustomStringConvertible {
        var description: String
    }

    /// Marks every descriptor above stderr close-on-exec, so a child holds nothing of the device's (its D-Bus
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
}
