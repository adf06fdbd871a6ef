/// A kernel and a BlueZ booted together: the pair a user's machine runs (docs/lab.md, "Kernels and systems").
///
/// Named systems stand for the distributions blemu's users run; any other pair is `--kernel` with `--bluez`.
public struct LabSystem: Sendable, Equatable, CustomStringConvertible {
    /// A named system: which kernel series and BlueZ version it pairs, and whose machines it stands for.
    public struct Name: Sendable, Equatable {
        /// What `--system` takes: "debian-12".
        public let name: String
        /// The kernel series (`--kernel`): "6.1".
        public let kernel: String
        /// The BlueZ version (`--bluez`): "5.66".
        public let bluez: String
        /// Whose machines run this pair, for `lab check` and docs/lab.md.
        public let standsFor: String
    }

    /// The named systems, oldest first. Debian 12's is the lab's default and boots fastest.
    public static let names: [Name] = [
        Name(
            name: "debian-12", kernel: "6.1", bluez: "5.66",
            standsFor: "Debian 12 (bookworm) and Raspberry Pi OS on it: the lab's default"),
        Name(
            name: "debian-13", kernel: "6.12", bluez: "5.82",
            standsFor: "Debian 13 (trixie), Raspberry Pi OS trixie; BlueZ as in Fedora 42 and Arch mid-2025"),
        Name(
            name: "current", kernel: "7.2", bluez: "5.87",
            standsFor: "the newest kernel and BlueZ (Debian sid in late 2026, rolling distributions)"),
    ]

    /// The name this pair goes by: a named system's, or "kernel SERIES + BlueZ VERSION" for a hand-made pair.
    public let name: String
    /// The kernel booted.
    public let kernel: LabKernel
    /// The BlueZ booted.
    public let bluez: BlueZInstall

    /// A pair under `name`.
    public init(name: String, kernel: LabKernel, bluez: BlueZInstall) {
        self.name = name
        self.kernel = kernel
        self.bluez = bluez
    }

    /// A pair named after its parts, or after the named system it matches.
    public init(kernel: LabKernel, bluez: BlueZInstall) {
        let named = Self.names.first { $0.kernel == kernel.series && $0.bluez == bluez.version }
        self.init(name: named?.name ?? "kernel \(kernel.series) + BlueZ \(bluez.version)", kernel: kernel, bluez: bluez)
    }

    /// "current (kernel 7.2.13+deb14-amd64, BlueZ 5.87)".
    public var description: String { "\(name) (kernel \(kernel.release), BlueZ \(bluez.version))" }

    /// Why `--system` could not be resolved.
    public struct ResolveError: Error, Equatable, CustomStringConvertible {
        /// A one-line message naming what is missing and the commands that add it.
        public let description: String
    }

    /// The named system `name`, with its kernel and BlueZ resolved here.
    public static func resolve(
        _ name: String, kernelCache: [String] = LabKernel.cacheRoots(), bluezCache: [String] = BlueZInstall.cacheRoots()
    ) throws(ResolveError) -> LabSystem {
        guard let named = names.first(where: { $0.name == name }) else {
            throw ResolveError(
                description: "--system \(name): not a named system (\(names.map(\.name).joined(separator: ", ")))")
        }
        var missing: [String] = []
        let kernel: LabKernel?
        do { kernel = try LabKernel.resolve(named.kernel, cacheRoots: kernelCache) } catch {
            kernel = nil
            missing.append("scripts/fetch-kernel \(named.kernel)")
        }
        let bluez: BlueZInstall?
        do { bluez = try BlueZInstall.resolve(named.bluez, cacheRoots: bluezCache) } catch {
            bluez = nil
            missing.append("scripts/build-bluez \(named.bluez)")
        }
        guard let kernel, let bluez else {
            throw ResolveError(
                description: "--system \(name) (kernel \(named.kernel), BlueZ \(named.bluez)) is not installed: run "
                    + missing.joined(separator: " && ") + ", or install blemu-lab")
        }
        return LabSystem(name: named.name, kernel: kernel, bluez: bluez)
    }

    /// The named systems this machine can boot, oldest first.
    public static func available(
        kernelCache: [String] = LabKernel.cacheRoots(), bluezCache: [String] = BlueZInstall.cacheRoots()
    ) -> [LabSystem] {
        names.compactMap { try? resolve($0.name, kernelCache: kernelCache, bluezCache: bluezCache) }
    }
}
