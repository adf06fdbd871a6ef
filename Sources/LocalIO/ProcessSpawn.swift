#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts a child as a shell would start it: the stop signals and SIGPIPE at their defaults and none blocked (the
/// parent may ignore them, as the serving process does to unregister first, and a child keeps ignored signals and its
/// spawning thread's mask across exec: libdispatch's worker threads block nearly every signal, and qemu so started
/// ignored timeout(1)'s SIGTERM), holding none of the parent's descriptors, in a process group of its own so a stop
/// reaches whatever the child started and a Ctrl-C at the terminal reaches only the parent, which stops it in order.
/// The one spawn of `blemu run`'s children (the live view, `--handler`) and the lab's (qemu, RootCanal, bluetoothd
/// --version), with posix_spawn: Foundation's `Process` would bring its ICU data into every binary that used it.
public enum ProcessSpawn {
    /// Where a child's stdout or stderr goes.
    public enum Output: Sendable, Equatable {
        /// Where the parent's goes.
        case inherited
        /// /dev/null.
        case discarded
        /// This descriptor of the parent's (a pipe's write end, an open file).
        case descriptor(Int32)
        /// The child's stderr (for stdout: a person's lines that must not mix with the parent's stdout).
        case standardError
    }

    /// Why a child could not start: the system's words.
    public struct SpawnError: Error, CustomStringConvertible, Sendable {
        /// `strerror` of posix_spawn's error, e.g. "No such file or directory".
        public var description: String
    }

    /// Starts `arguments` (the executable's path first) with stdin from /dev/null, `environment` replacing or adding
    /// those variables, stdout and stderr as given, in a process group of its own unless `ownGroup` is false (a
    /// helper that should end with its parent's group, as a test's daemons do when the run is interrupted). Returns
    /// the process id, for the caller to reap.
    public static func start(
        _ arguments: [String], environment additions: [String: String] = [:], standardOutput: Output = .inherited,
        standardError: Output = .inherited, ownGroup: Bool = true
    ) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // stderr first, so `stdout: .standardError` joins where stderr now goes.
        for (target, output) in [(Int32(2), standardError), (1, standardOutput)] {
            switch output {
            case .inherited: break
            case .discarded: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, target)
            case .standardError: posix_spawn_file_actions_adddup2(&actions, 2, target)
            }
        }
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
            &attributes,
            Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | (ownGroup ? POSIX_SPAWN_SETPGROUP : 0)))
        // After the redirections above, so a `.descriptor` source above stderr is duplicated before it closes; the
        // marking where the action is missing or cannot be added.
        if closeFromAction.map({ $0(&actions, 3) }) != 0 { markCloseOnExec() }
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
        var status = posix_spawn(&pid, arguments[0], &actions, &attributes, &pointers, &environment)
        // ETXTBSY: the program was just written and a child another thread forked an instant ago still holds it open
        // for writing until its own exec (execve(2)); that passes within microseconds, so a few short retries.
        var retries = 0
        while status == ETXTBSY && retries < 50 {
            retries += 1
            usleep(1_000)
            status = posix_spawn(&pid, arguments[0], &actions, &attributes, &pointers, &environment)
        }
        guard status == 0 else { return .failure(SpawnError(description: String(cString: strerror(status)))) }
        return .success(pid)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run time because Glibc's
    /// Swift overlay does not declare it: the child closes every descriptor from 3 up, so it holds nothing of the
    /// parent's (a device's D-Bus connection, the sockets bluetoothd passed it, its control socket's; the
    /// fake-bluetoothd test found twelve sockets shared), including one another thread opened an instant before the
    /// spawn, which no marking in the parent can reach. Nil where the C library has no such action.
    private static let closeFromAction:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            // RTLD_DEFAULT is the null handle in glibc's <dlfcn.h>.
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            else { return nil }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()

    /// Where the C library has no close-from action: marks every descriptor above stderr close-on-exec, which a
    /// descriptor opened by another thread after the marking escapes; the flag is harmless to a parent that starts
    /// children only through here (a `dup2` action clears it on the descriptor it makes).
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
