/// The exit codes blemu uses, from sysexits.h, so scripts and CI can tell the failures apart; thrown to end a run
/// with that code. blemu-cli maps them to ArgumentParser's `ExitCode`; `blemu` exits with them.
public struct ExitStatus: Error, Hashable, Sendable {
    /// The process's exit code.
    public var code: Int32

    /// An exit status with code `code`.
    public init(_ code: Int32) { self.code = code }

    /// 0: done.
    public static let success = ExitStatus(0)
    /// 64, EX_USAGE: the command line is wrong.
    public static let usage = ExitStatus(64)
    /// 65, EX_DATAERR: a profile has errors.
    public static let badProfile = ExitStatus(65)
    /// 66, EX_NOINPUT: an input file cannot be opened.
    public static let noInput = ExitStatus(66)
    /// 69, EX_UNAVAILABLE: bluetoothd, the adapter, or the lab's tools are unavailable.
    public static let unavailable = ExitStatus(69)
    /// 70, EX_SOFTWARE: an internal error.
    public static let software = ExitStatus(70)
    /// 73, EX_CANTCREAT: an output file or directory cannot be created.
    public static let cannotCreate = ExitStatus(73)
}
