import ArgumentParser

/// The exit codes blemu uses, from sysexits.h, so scripts and CI can tell the failures apart.
extension ExitCode {
    /// 64, EX_USAGE: the command line is wrong.
    static let usage = ExitCode(64)
    /// 65, EX_DATAERR: a profile has errors.
    static let badProfile = ExitCode(65)
    /// 66, EX_NOINPUT: an input file cannot be opened.
    static let noInput = ExitCode(66)
    /// 69, EX_UNAVAILABLE: bluetoothd, the adapter, or the lab's tools are unavailable.
    static let unavailable = ExitCode(69)
    /// 70, EX_SOFTWARE: an internal error.
    static let software = ExitCode(70)
    /// 73, EX_CANTCREAT: an output file or directory cannot be created.
    static let cannotCreate = ExitCode(73)
}
