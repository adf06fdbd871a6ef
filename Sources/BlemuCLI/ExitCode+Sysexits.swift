import ArgumentParser
import Serving

/// The exit codes blemu uses, from sysexits.h (`ExitStatus` holds the table), so scripts and CI can tell the
/// failures apart.
extension ExitCode {
    /// The ArgumentParser exit code for an exit status.
    init(_ status: ExitStatus) { self.init(status.code) }

    /// 64, EX_USAGE: the command line is wrong.
    static let usage = ExitCode(ExitStatus.usage)
    /// 65, EX_DATAERR: a profile has errors.
    static let badProfile = ExitCode(ExitStatus.badProfile)
    /// 66, EX_NOINPUT: an input file cannot be opened.
    static let noInput = ExitCode(ExitStatus.noInput)
    /// 69, EX_UNAVAILABLE: bluetoothd, the adapter, or the lab's tools are unavailable.
    static let unavailable = ExitCode(ExitStatus.unavailable)
    /// 70, EX_SOFTWARE: an internal error.
    static let software = ExitCode(ExitStatus.software)
    /// 73, EX_CANTCREAT: an output file or directory cannot be created.
    static let cannotCreate = ExitCode(ExitStatus.cannotCreate)
}
