import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How `blemu` and `blemu-cli` hand a command line to each other: each finds the other beside itself (a build
/// directory, the lab's copy) or where the Debian package puts it (/usr/bin/blemu, /usr/libexec/blemu/blemu-cli), and
/// replaces itself with it (execv), so a script's process id, its signals and the exit code stay one program's.
///
/// `blemu` serves `blemu run FILE --option value...` itself and hands anything else to blemu-cli; blemu-cli parses
/// `run` with ArgumentParser (help, errors, any spelling) and hands the checked options back as
/// `RunOptions.arguments`, marked with `marker` so `blemu` never hands them on again.
public enum Handover {
    /// The environment variable blemu-cli sets when it hands `run` back: `blemu` then serves or fails, never loops.
    public static let marker = "BLEMU_HANDED_OVER"

    /// The serving executable, and where the package installs it relative to blemu-cli's directory.
    public static let serving = (name: "blemu", packaged: "../../bin/blemu")
    /// The executable with every command, and where the package installs it relative to blemu's directory.
    public static let commands = (name: "blemu-cli", packaged: "../libexec/blemu/blemu-cli")
    /// The variable that tells a view started by `blemu run --ui` the pid of that process: the view ends once it is
    /// gone, however it ended.
    public static let liveParentVariable = "BLEMU_UI_PARENT"

    /// This executable's real path (symbolic links resolved), from /proc/self/exe.
    public static var ownPath: String? {
        guard let resolved = realpath("/proc/self/exe", nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The executable `program` names, beside this one or at its packaged place; nil when neither is executable.
    public static func locate(_ program: (name: String, packaged: String)) -> String? {
        guard let own = ownPath else { return nil }
        let directory = LocalFile.split(own).directory
        let candidates = [directory + "/" + program.name, directory + "/" + program.packaged]
        guard let found = candidates.first(where: { access($0, X_OK) == 0 }), let real = realpath(found, nil) else {
            return nil
        }
        defer { free(real) }
        return String(cString: real)
    }

    /// Replaces this process with `path` run with `arguments` (argv[0] is `path`), with `marked` setting `marker`.
    /// Returns only when exec failed, with the system's reason.
    public static func exec(_ path: String, _ arguments: [String], marked: Bool = false) -> String {
        if marked { setenv(marker, "1", 1) } else { unsetenv(marker) }
        // exec keeps the calling thread's signal mask (execve(2)); a Swift pool thread blocks nearly every signal.
        // The next program starts as a shell would start it, with none blocked.
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        var pointers = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, &pointers)
        let reason = String(cString: strerror(errno))
        for pointer in pointers { free(pointer) }
        return reason
    }

    /// Whether blemu-cli handed this command line over (`marker` set), read once and removed from the environment so
    /// nothing this process starts inherits it.
    public static func takeMarker() -> Bool {
        defer { unsetenv(marker) }
        return getenv(marker) != nil
    }
}
