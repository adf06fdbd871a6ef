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
/// The program runs through `SpawnedProcess` (posix_spawn) rather than Foundation's `Process`, which needs a run loop
/// wake-up socket pair and, where it cannot make one (it could not in the lab's guest), waits forever.
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

    /// The first line `PATH --version` prints on stdout, when it exits 0; nil otherwise. A version is one short
    /// line: at most 4 KiB is read, whatever the program writes.
    static func firstLine(of path: String) -> String? {
        guard let (status, output) = try? SpawnedProcess.run([path, "--version"], readingAtMost: 4096), status == 0
        else { return nil }
        let line = String(decoding: output, as: UTF8.self).split(separator: "\n").first.map(String.init)
        return line?.isEmpty == false ? line : nil
    }
}
