import FoundationEssentials

/// One kernel the lab VM can boot: its image and the modules of the same release.
///
/// The system's newest installed kernel (`/boot/vmlinuz-RELEASE` with `/lib/modules/RELEASE`) boots by default: on
/// Debian 12 that is 6.1, the fastest to boot. Others come from Debian's binary packages, unpacked by
/// `scripts/fetch-kernel SERIES` into the per-user cache (`<cache>/kernel/RELEASE/{vmlinuz,lib/modules/RELEASE}`),
/// never installed on the host. The VM runs the host's userland, so a cached kernel's modules are mounted at
/// `/lib/modules/RELEASE` inside it (`GuestInit`), where the host's modprobe looks.
public struct LabKernel: Sendable, Equatable, CustomStringConvertible {
    /// What `uname -r` says in the VM: "6.1.0-41-amd64", "7.2.13+deb14-amd64".
    public let release: String
    /// The image qemu boots.
    public let image: String
    /// The directory holding this release's modules and modules.dep.
    public let modules: String
    /// True for the host's own installed kernel, whose modules already sit at /lib/modules/RELEASE.
    public let isSystem: Bool

    /// The kernel series, the release's first two numbers: "6.1", "6.12", "7.2".
    public var series: String { Self.series(of: release) }

    /// "kernel 7.2.13+deb14-amd64 (/root/.cache/blemu/kernel/...)" or "kernel 6.1.0-41-amd64 (system)".
    public var description: String { "kernel \(release) (\(isSystem ? "system" : image))" }

    /// A kernel from its parts; `resolve` and `available` are the usual way to get one.
    public init(release: String, image: String, modules: String, isSystem: Bool) {
        self.release = release
        self.image = image
        self.modules = modules
        self.isSystem = isSystem
    }

    /// Why `--kernel` could not be resolved.
    public struct ResolveError: Error, Equatable, CustomStringConvertible {
        /// A one-line message naming what was looked for and how to get it.
        public let description: String
    }

    /// The series of a release: its first two dot-separated numbers ("6.12.118+deb13-amd64" is "6.12").
    static func series(of release: String) -> String {
        let numbers = release.split(whereSeparator: { !$0.isNumber && $0 != "." }).first ?? ""
        return numbers.split(separator: ".").prefix(2).joined(separator: ".")
    }

    /// The newest installed kernel whose modules are there (`root` prefixes the paths, for tests); nil when none.
    public static func system(root: String = "") -> LabKernel? {
        let files = FileManager.default
        let release = ((try? files.contentsOfDirectory(atPath: root + "/boot")) ?? [])
            .filter { $0.hasPrefix("vmlinuz-") }.map { String($0.dropFirst("vmlinuz-".count)) }
            .filter { files.fileExists(atPath: root + "/lib/modules/\($0)/kernel") }
            .max(by: NumericOrder.ascending)
        return release.map {
            LabKernel(
                release: $0, image: root + "/boot/vmlinuz-\($0)", modules: root + "/lib/modules/\($0)",
                isSystem: true)
        }
    }

    /// A directory laid out as `scripts/fetch-kernel` leaves it (`vmlinuz` and `lib/modules/RELEASE`, one release);
    /// nil when either is missing.
    public static func directory(_ path: String) -> LabKernel? {
        let files = FileManager.default
        let releases = ((try? files.contentsOfDirectory(atPath: path + "/lib/modules")) ?? [])
            .filter { files.fileExists(atPath: "\(path)/lib/modules/\($0)/kernel") }
        guard releases.count == 1, let release = releases.first, files.fileExists(atPath: path + "/vmlinuz") else {
            return nil
        }
        return LabKernel(
            release: release, image: path + "/vmlinuz", modules: "\(path)/lib/modules/\(release)", isSystem: false)
    }

    /// Where the lab looks for kernels, in order: the user's cache, then the `blemu-lab` package's (`LabCache`).
    public static func cacheRoots() -> [String] { LabCache.roots("kernel") }

    /// Every kernel the lab can boot here: the system's first, then each unpacked one in `cacheRoots` by release
    /// (the first root's copy of a release wins).
    public static func available(cacheRoots: [String] = cacheRoots()) -> [LabKernel] {
        LabCache.eachOnce(in: cacheRoots, after: system().map { [$0] } ?? [], make: directory, key: \.release)
    }

    /// What `--kernel` names: "system", a series ("6.1", "6.12", "7.2": the system's when it is of that series,
    /// else the newest unpacked one of it), or a directory laid out as `scripts/fetch-kernel` leaves it.
    public static func resolve(_ name: String, cacheRoots: [String] = cacheRoots()) throws(ResolveError) -> LabKernel {
        if name.contains("/") {
            let path = URL(fileURLWithPath: name).standardizedFileURL.path
            guard let kernel = directory(path) else {
                throw ResolveError(
                    description: "--kernel \(name): no vmlinuz and lib/modules/RELEASE there "
                        + "(the layout scripts/fetch-kernel leaves)")
            }
            return kernel
        }
        let all = available(cacheRoots: cacheRoots)
        if name == "system" {
            guard let system = all.first(where: \.isSystem) else {
                throw ResolveError(
                    description: "--kernel system: no /boot/vmlinuz-* with its /lib/modules (run scripts/setup --lab)")
            }
            return system
        }
        // The system's kernel first when it is of the series (it boots from the host's own modules), else the
        // newest unpacked one.
        let ofSeries = all.filter { $0.series == name }
        if let match = ofSeries.first(where: \.isSystem) ?? ofSeries.last { return match }
        let known = all.map(\.series)
        throw ResolveError(
            description:
                "--kernel \(name): not unpacked (the lab has \(known.isEmpty ? "none" : known.joined(separator: ", "))); "
                + "unpack it with scripts/fetch-kernel \(name) or install blemu-lab")
    }

    /// The module file for `name` (path under the modules directory, without extension) when it is a plain .ko,
    /// which busybox's insmod needs; nil otherwise.
    func moduleFile(_ name: String) -> String? {
        let path = "\(modules)/\(name).ko"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Modules the initramfs needs to mount the host's root: the virtio PCI transport and 9p over it.
    static let initramfsRoots = ["virtio_pci", "9pnet_virtio", "9p"]

    /// Why the initramfs cannot be built from this kernel's modules.
    struct ModuleProblem: Error, Equatable, CustomStringConvertible {
        /// One line naming the module and what is wrong.
        let description: String
    }

    /// The modules the initramfs loads, dependencies first, as paths under `modules` without the extension: the
    /// closure of `initramfsRoots` in modules.dep, less what the kernel has built in (virtio from 6.12; fscache is
    /// its own module in 6.1 only). Each must be a plain .ko.
    func initramfsModules() throws(ModuleProblem) -> [String] {
        guard let dep = try? String(contentsOfFile: modules + "/modules.dep", encoding: .utf8) else {
            throw ModuleProblem(description: "\(modules)/modules.dep is missing (run depmod, or scripts/fetch-kernel)")
        }
        let builtin = (try? String(contentsOfFile: modules + "/modules.builtin", encoding: .utf8)) ?? ""
        return try Self.loadOrder(
            of: Self.initramfsRoots, modulesDep: dep, builtin: builtin, isPlain: { moduleFile($0) != nil })
    }

    /// The load order of `roots` and their dependencies from modules.dep's text (`path.ko[.xz]: dep dep`), each a
    /// path without extension; a root listed in modules.builtin is skipped.
    static func loadOrder(
        of roots: [String], modulesDep: String, builtin: String, isPlain: (String) -> Bool
    ) throws(ModuleProblem) -> [String] {
        func stem(_ path: Substring) -> String {
            var path = String(path)
            for suffix in [".xz", ".zst", ".gz"] where path.hasSuffix(suffix) { path.removeLast(suffix.count) }
            return path.hasSuffix(".ko") ? String(path.dropLast(3)) : path
        }
        func name(_ stem: String) -> String { String(stem.split(separator: "/").last ?? "") }
        var dependencies: [String: [String]] = [:]
        var pathOf: [String: String] = [:]
        for line in modulesDep.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let module = stem(line[..<colon])
            pathOf[name(module)] = module
            dependencies[module] = line[line.index(after: colon)...].split(separator: " ").map(stem)
        }
        let builtinNames = Set(builtin.split(separator: "\n").map { name(stem($0)) })
        var order: [String] = []
        var visiting: Set<String> = []
        func visit(_ module: String) throws(ModuleProblem) {
            guard !order.contains(module) else { return }
            guard visiting.insert(module).inserted else {
                throw ModuleProblem(description: "modules.dep has a dependency cycle through \(module)")
            }
            for dependency in dependencies[module] ?? [] { try visit(dependency) }
            guard isPlain(module) else {
                throw ModuleProblem(
                    description: "\(module).ko is missing or compressed: busybox's insmod loads plain .ko files "
                        + "(scripts/fetch-kernel decompresses the ones the initramfs needs)")
            }
            order.append(module)
        }
        for root in roots where !builtinNames.contains(root) {
            guard let module = pathOf[root] else {
                throw ModuleProblem(description: "no module \(root) in modules.dep, and it is not built in")
            }
            try visit(module)
        }
        return order
    }
}
