import Glibc

/// The running kernel, which `blemu doctor` and `blemu run`'s diagnosis of a refused registration hold against the
/// known bad kernel/BlueZ pairs (BlueZModel `KernelBlueZPair`).
public enum KernelRelease {
    /// What `uname -r` prints: "6.12.93+rpt-rpi-v8".
    public static func current() -> String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
