import Glibc

/// A child process started with posix_spawn and a cleared signal mask (threads of this process block signals,
/// and a child would inherit that and ignore SIGTERM); `stop()` terminates and reaps it.
final class Spawned: Sendable {
    let pid: pid_t

    /// Starts `arguments[0]` with stdout going to `stdoutFD` (or /dev/null) and stderr to /dev/null.
    init(_ arguments: [String], stdoutFD: Int32? = nil, closeInChild: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdoutFD {
            posix_spawn_file_actions_adddup2(&actions, stdoutFD, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if let closeInChild { posix_spawn_file_actions_addclose(&actions, closeInChild) }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
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
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
        guard status == 0 else { throw SpawnError(description: "cannot start \(arguments[0]): error \(status)") }
        pid = child
    }

    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// Runs a shell command and returns its exit status.
    static func shell(_ command: String) throws -> Int32 {
        let child = try Spawned(["/bin/sh", "-c", command], stdoutFD: 2)
        var status: Int32 = 0
        waitpid(child.pid, &status, 0)
        return (status >> 8) & 0xFF
    }

    /// This executable's path, for starting it again as the Swift responder.
    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return count > 0
            ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : CommandLine.arguments[0]
    }

    /// A private dbus-daemon listening in `workspace`, with its address.
    static func daemon(workspace: String) throws -> (address: String, stop: @Sendable () -> Void) {
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(workspace)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = workspace + "/bus.conf"
        guard let file = fopen(configPath, "w") else { throw SpawnError(description: "cannot write \(configPath)") }
        fputs(config, file)
        fclose(file)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SpawnError(description: "pipe failed") }
        let process = try Spawned(
            ["/usr/bin/dbus-daemon", "--config-file=\(configPath)", "--nofork", "--print-address=1"],
            stdoutFD: ends[1], closeInChild: ends[0])
        close(ends[1])
        defer { close(ends[0]) }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(ends[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        guard !bytes.isEmpty else {
            process.stop()
            throw SpawnError(description: "dbus-daemon printed no address")
        }
        return (String(decoding: bytes, as: UTF8.self), { process.stop() })
    }
}

struct SpawnError: Error, CustomStringConvertible {
    var description: String
}
