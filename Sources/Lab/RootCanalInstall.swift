import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the lab finds RootCanal: PyPI's `rootcanal` package, with its Linux binary, in the lab's venv
/// (`scripts/setup --lab` installs it there), and the glibc it needs where the host's is older.
public struct RootCanalInstall: Sendable, Equatable, CustomStringConvertible {
    /// The version the lab runs. Not 1.10.0, the last whose binary starts on Debian 12's glibc: its link between
    /// airs dies on the second packet it receives (model/devices/link_layer_socket_device.cc moves `size_bytes_`
    /// away after the first; fixed in 1.12.0). The relay's changes (`ControllerStream`) are checked against this one.
    public static let version = "1.13.0"

    /// The oldest glibc the binary starts on (it needs GLIBC_2.39 and GLIBCXX_3.4.32, Debian 13's).
    static let neededGlibc = (2, 39)

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
    /// Debian 13's loader and libraries (scripts/fetch-glibc-runtime) when the host's glibc is older than
    /// `neededGlibc`, else nil.
    public var glibcRuntime: String? = nil

    /// "rootcanal 1.13.0 (PATH)".
    public var description: String { "rootcanal \(installedVersion) (\(executable))" }

    /// Where scripts/fetch-glibc-runtime unpacks the runtime.
    public static var glibcRuntimeDirectory: String { LabCache.root() + "/glibc-runtime" }

    /// Why this host cannot start RootCanal as it is, or nil when it can: its glibc is older than the binary's and
    /// the runtime has not been unpacked.
    public static func glibcProblem(hostGlibc: (Int, Int)? = hostGlibcVersion, runtime: String? = nil) -> String? {
        guard let host = hostGlibc, host < neededGlibc else { return nil }
        let directory = runtime ?? glibcRuntimeDirectory
        if FileManager.default.isExecutableFile(atPath: directory + "/" + loader) { return nil }
        return "RootCanal \(version) needs glibc \(neededGlibc.0).\(neededGlibc.1), this host has \(host.0).\(host.1): "
            + "run scripts/fetch-glibc-runtime (or scripts/setup --lab) to unpack Debian 13's beside it"
    }

    /// The runtime's dynamic loader, which starts a program with the runtime's directory as its library path.
    static let loader = "ld-linux-x86-64.so.2"

    /// The command that starts RootCanal: through the runtime's loader when there is one (ld.so(8): `--library-path`
    /// takes the place of LD_LIBRARY_PATH for this one program, and its children get the host's libraries).
    public static func launch(_ executable: String, glibcRuntime: String?) -> [String] {
        guard let runtime = glibcRuntime else { return [executable] }
        return [runtime + "/" + loader, "--library-path", runtime, executable]
    }

    /// This process's glibc, as confstr(3) `_CS_GNU_LIBC_VERSION` gives it ("glibc 2.36").
    public static let hostGlibcVersion: (Int, Int)? = {
        var buffer = [CChar](repeating: 0, count: 64)
        guard confstr(Int32(_CS_GNU_LIBC_VERSION), &buffer, buffer.count) > 0 else { return nil }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = text.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
        return parts.count >= 2 ? (parts[0], parts[1]) : nil
    }()

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
            var install = RootCanalInstall(executable: executable, installedVersion: version ?? "unknown")
            if let host = hostGlibcVersion, host < neededGlibc,
                files.isExecutableFile(atPath: glibcRuntimeDirectory + "/" + loader)
            {
                install.glibcRuntime = glibcRuntimeDirectory
            }
            return install
        }
        return nil
    }
}
