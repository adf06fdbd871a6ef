import Foundation

/// Where the lab finds RootCanal: PyPI's `rootcanal` package, with its Linux binary, in the lab's venv
/// (`scripts/setup --lab` installs it there).
public struct RootCanalInstall: Sendable, Equatable, CustomStringConvertible {
    /// The version the lab runs. 1.11 and later ship a binary that needs glibc 2.39 (Debian 13's), so it does not
    /// start on Debian 12; the relay's two changes (`ControllerStream`) are checked against this one.
    public static let version = "1.10.0"

    /// The command that installs it.
    public static func installCommand(venv: String? = nil) -> String {
        "\(venv ?? defaultVenv)/bin/pip install rootcanal==\(version)   (or scripts/setup --lab)"
    }

    /// The lab's venv: `venv` in the lab's cache, where scripts/setup --lab makes it.
    static var defaultVenv: String { LabCache.root() + "/venv" }

    /// The executable.
    public let executable: String
    /// The package's version, from its dist-info directory.
    public let installedVersion: String

    /// "rootcanal 1.10.0 (PATH)".
    public var description: String { "rootcanal \(installedVersion) (\(executable))" }

    /// The RootCanal in `venv`'s site-packages, or nil when none is installed there.
    public static func find(venv: String? = nil) -> RootCanalInstall? {
        let files = FileManager.default
        let libraries = (venv ?? defaultVenv) + "/lib"
        let pythons = ((try? files.contentsOfDirectory(atPath: libraries)) ?? []).filter { $0.hasPrefix("python3") }
        for python in pythons.sorted() {
            let packages = "\(libraries)/\(python)/site-packages"
            let executable = packages + "/rootcanal/bin/linux-x86_64/rootcanal"
            guard files.isExecutableFile(atPath: executable) else { continue }
            let info = ((try? files.contentsOfDirectory(atPath: packages)) ?? []).first {
                $0.hasPrefix("rootcanal-") && $0.hasSuffix(".dist-info")
            }
            let version = info.map { String($0.dropFirst("rootcanal-".count).dropLast(".dist-info".count)) }
            return RootCanalInstall(executable: executable, installedVersion: version ?? "unknown")
        }
        return nil
    }
}
