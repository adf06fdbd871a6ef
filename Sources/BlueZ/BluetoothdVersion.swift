import BlueZModel
import DBus
import Glibc
import LocalIO
import Logging

/// The version of the bluetoothd on a bus, for `blemu clone`'s header, `blemu doctor` and `blemu run`'s diagnosis of
/// a refused registration: `--version` of the running process's executable (`/proc/PID/exe`, which its user and root
/// can read, else the program its command line names), else of Debian's
/// `/usr/libexec/bluetooth/bluetoothd` (or `/usr/sbin/bluetoothd`, where other distributions put it).
///
/// The program runs through `posix_spawn` rather than Foundation's `Process`, which needs a run loop wake-up socket
/// pair and, where it cannot make one (it could not in the lab's guest), waits forever.
public enum BluetoothdVersion {
    /// "5.82"; nil when neither executable runs or prints a version.
    public static func of(bus: BusAddress) async -> String? {
        let logger = Logger(label: "blemu.version", factory: { _ in SwiftLogNoOpLogHandler() })
        var candidates = ["/usr/libexec/bluetooth/bluetoothd", "/usr/sbin/bluetoothd"]
        if let connection = try? BusConnection(bus, logger: logger) {
            defer { connection.close() }
            if let owner = try? await connection.nameOwner(BlueZName.service),
                let pid = try? await connection.processID(of: owner)
            {
                // /proc/PID/exe is readable by bluetoothd's user and root only; anyone may read the command line,
                // whose first word is the program that runs. When that is known, only it answers: another
                // bluetoothd's version (the system's, beside a build the user cannot run) would be a wrong one.
                let program = (try? LocalFile.bytes(atPath: "/proc/\(pid)/cmdline"))
                    .map { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                let named: [String] = if let program, program.hasPrefix("/") { [program] } else { candidates }
                candidates = ["/proc/\(pid)/exe"] + named
            }
        }
        return candidates.lazy.filter(isBluetoothd).compactMap(firstLine(of:)).first
    }

    /// Whether `path` (through a link such as /proc/PID/exe) is a program named bluetoothd: the owner of org.bluez
    /// is run with `--version`, and whatever else holds the name (a test's stand-in, another program) is not run.
    static func isBluetoothd(_ path: String) -> Bool {
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &target, Int(PATH_MAX))
        let resolved =
            count > 0 ? String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : path
        return resolved.split(separator: "/").last == "bluetoothd"
    }

    /// The first line `PATH --version` prints on stdout, when it exits 0; nil otherwise.
    static func firstLine(of path: String) -> String? {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { return nil }
        // Close-on-exec, so no other program started meanwhile inherits the pipe; dup2 clears it on the child's stdout.
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(path), strdup("--version"), nil]
        defer { arguments.forEach { free($0) } }
        let spawned = posix_spawn(&pid, path, &actions, nil, arguments, environ)
        close(pipe[1])
        defer { close(pipe[0]) }
        guard spawned == 0 else { return nil }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        // A version is one short line: stop reading at 4 KiB whatever the program writes.
        while output.count < 4096 {
            let count = read(pipe[0], &buffer, buffer.count)
            if count > 0 {
                output += buffer[0..<count]
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED && WEXITSTATUS == 0, spelled out: the macros do not import.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
        let line = String(decoding: output, as: UTF8.self).split(separator: "\n").first.map(String.init)
        return line?.isEmpty == false ? line : nil
    }
}
