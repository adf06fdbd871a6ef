import FoundationEssentials
import LocalIO

/// One BlueZ the lab can boot: bluetoothd and the tools that must match it (btvirt, btmon, and the bluetoothctl
/// and gatttool a central may run), from one build. btmgmt is always the system's: mgmt is the kernel's protocol,
/// and 5.82's btmgmt never leaves its shell's non-interactive mode in the VM (scripts/build-bluez).
///
/// The lab boots either the system's BlueZ (Debian 12: 5.66) or a release built by `scripts/build-bluez VERSION`
/// into the per-user cache (`<cache>/bluez/VERSION/bin`). Users run 5.72 to 5.8x, where bluetoothd behaves
/// differently in ways blemu depends on (docs/bluez.md), so the lab proves blemu on both generations.
public struct BlueZInstall: Sendable, Equatable, CustomStringConvertible {
    /// What `bluetoothd --version` prints: "5.66", "5.82".
    public let version: String
    /// The bluetoothd to start.
    public let bluetoothd: String
    /// The directory holding btvirt, btmon, bluetoothctl and gatttool of the same build; the VM puts it first in
    /// PATH. Nil for the system's own BlueZ, whose tools are already on PATH.
    public let toolDirectory: String?

    /// Tools a build directory must hold besides bluetoothd; the lab starts each of them.
    static let requiredTools = ["btvirt", "btmon"]

    /// Whether this is `version` or later, compared numerically ("5.9" < "5.66" < "5.82").
    public func isAtLeast(_ version: String) -> Bool {
        !NumericOrder.ascending(self.version, version)
    }

    /// "BlueZ 5.82 (/root/.cache/blemu/bluez/5.82/bin)" or "BlueZ 5.66 (system)".
    public var description: String { "BlueZ \(version) (\(toolDirectory ?? "system"))" }

    /// An install from its parts; `resolve` and `available` are the usual way to get one.
    public init(version: String, bluetoothd: String, toolDirectory: String?) {
        self.version = version
        self.bluetoothd = bluetoothd
        self.toolDirectory = toolDirectory
    }

    /// Why `--bluez` could not be resolved.
    public struct ResolveError: Error, Equatable, CustomStringConvertible {
        /// A one-line message naming what was looked for and how to get it.
        public let description: String
    }

    /// The system's BlueZ (Debian: /usr/libexec/bluetooth/bluetoothd), or nil when bluez is not installed.
    public static func system(root: String = "") -> BlueZInstall? {
        let candidates = ["/usr/libexec/bluetooth/bluetoothd", "/usr/sbin/bluetoothd"].map { root + $0 }
        guard let bluetoothd = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
            let version = version(of: bluetoothd)
        else { return nil }
        return BlueZInstall(version: version, bluetoothd: bluetoothd, toolDirectory: nil)
    }

    /// A build directory holding bluetoothd and the tools; nil when something is missing or bluetoothd will not
    /// say its version.
    public static func directory(_ path: String) -> BlueZInstall? {
        let files = FileManager.default
        let bluetoothd = path + "/bluetoothd"
        guard files.isExecutableFile(atPath: bluetoothd),
            requiredTools.allSatisfy({ files.isExecutableFile(atPath: path + "/" + $0) }),
            let version = version(of: bluetoothd)
        else { return nil }
        return BlueZInstall(version: version, bluetoothd: bluetoothd, toolDirectory: path)
    }

    /// Where the lab looks for builds, in order: the user's cache, then the `blemu-lab` package's (`LabCache`).
    public static func cacheRoots() -> [String] { LabCache.roots("bluez") }

    /// Every BlueZ the lab can boot here: the system's first, then each build in `cacheRoots` by version (the
    /// first root's build of a version wins).
    public static func available(cacheRoots: [String] = cacheRoots()) -> [BlueZInstall] {
        LabCache.eachOnce(
            in: cacheRoots, after: system().map { [$0] } ?? [], make: { directory($0 + "/bin") }, key: \.version)
    }

    /// The file beside a build's `bin/` naming the patches scripts/build-bluez applied to its btvirt.
    static let radioPatchesFile = "btvirt-patches"

    /// The lab's radio: a btvirt built with scripts/btvirt-ll-timing.patch (and btvirt-conn-handles.patch, for a
    /// central with links to several peripherals, and btvirt-first-report.patch, for discovery), which completes the
    /// LL feature exchange 200 ms after the link comes up, as a link's connection events take time, instead of at
    /// once. Without it bluetoothd sees a central's ATT socket connect before MGMT Device Connected and never signals
    /// `Connected` (the patch says why), and bleak drops the link. `bluez`'s own btvirt when its build is patched,
    /// else the newest patched build's in `cacheRoots`: the controller emulator is the lab's, not the BlueZ under
    /// test, so one serves every bluetoothd. Nil when no build has one (the system's btvirt is unpatched).
    public static func labRadio(for bluez: BlueZInstall?, cacheRoots: [String] = cacheRoots()) -> String? {
        let files = FileManager.default
        let builds = cacheRoots.flatMap { root in
            ((try? files.contentsOfDirectory(atPath: root)) ?? [])
                .sorted { NumericOrder.ascending($1, $0) }
                .map { "\(root)/\($0)/bin" }
        }
        return ([bluez?.toolDirectory].compactMap { $0 } + builds).first { bin in
            files.isExecutableFile(atPath: bin + "/btvirt")
                && files.fileExists(atPath: bin + "/../" + radioPatchesFile)
        }.map { $0 + "/btvirt" }
    }

    /// The patches scripts/build-bluez applies to btvirt today, as its `radioPatchesFile` names them.
    static let currentRadioPatches = ["btvirt-ll-timing", "btvirt-conn-handles", "btvirt-first-report"]

    /// The patches `radio`'s build applied (its `radioPatchesFile`), comma-separated, for the run's transcript.
    static func radioPatches(of radio: String) -> String {
        let names = appliedRadioPatches(of: radio)
        return names.isEmpty ? "unknown" : names.joined(separator: ", ")
    }

    /// The patches of `currentRadioPatches` that `radio`'s build lacks: a build made before one was added.
    static func missingRadioPatches(of radio: String) -> [String] {
        let applied = Set(appliedRadioPatches(of: radio))
        return currentRadioPatches.filter { !applied.contains($0) }
    }

    private static func appliedRadioPatches(of radio: String) -> [String] {
        let file = LocalFile.split(radio).directory + "/../" + radioPatchesFile
        return ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline)
            .map(String.init)
    }

    /// What `--bluez` names: "system", a version ("5.66", "5.82": the system's when it is that version, else the
    /// build in the cache), or a directory holding bluetoothd and its tools (a path with a slash).
    public static func resolve(_ name: String, cacheRoots: [String] = cacheRoots()) throws(ResolveError) -> BlueZInstall
    {
        if name.contains("/") {
            let path = URL(fileURLWithPath: name).standardizedFileURL.path
            guard let build = directory(path) else {
                throw ResolveError(
                    description: "--bluez \(name): no bluetoothd, \(requiredTools.joined(separator: ", ")) there "
                        + "(a BlueZ build's binaries, e.g. from scripts/build-bluez)")
            }
            return build
        }
        if name == "system" {
            guard let system = system() else {
                throw ResolveError(description: "--bluez system: bluez is not installed (run scripts/setup --lab)")
            }
            return system
        }
        let known = available(cacheRoots: cacheRoots)
        if let match = known.first(where: { $0.version == name }) { return match }
        throw ResolveError(
            description:
                "--bluez \(name): not installed (the lab has "
                + "\(known.isEmpty ? "none" : known.map(\.version).joined(separator: ", "))); "
                + "build it with scripts/build-bluez \(name) or install blemu-lab")
    }

    /// The first line `bluetoothd --version` prints ("5.82"), or nil when it cannot be run.
    static func version(of bluetoothd: String) -> String? {
        guard let (status, output) = try? SpawnedProcess.run([bluetoothd, "--version"]), status == 0 else {
            return nil
        }
        let text = String(decoding: output, as: UTF8.self).trimmingWhitespace()
        guard let first = text.split(separator: "\n").first, !first.isEmpty else { return nil }
        return String(first)
    }
}
