import Foundation
import Testing

@testable import Lab

/// Kernels and systems the lab boots: the initramfs's modules from each kernel's own modules.dep, `--kernel` and
/// `--system` resolved against a cache laid out as scripts/fetch-kernel leaves it.
struct LabKernelTests {
    /// Debian 12's 6.1: virtio and fscache are modules (modules.dep as depmod writes it, abridged).
    static let dep61 = """
        kernel/drivers/virtio/virtio_ring.ko:
        kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
        kernel/drivers/virtio/virtio_pci_modern_dev.ko:
        kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
        kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko \
        kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
        kernel/fs/netfs/netfs.ko:
        kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
        kernel/net/9p/9pnet.ko:
        kernel/net/9p/9pnet_virtio.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko \
        kernel/net/9p/9pnet.ko
        kernel/fs/9p/9p.ko: kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko kernel/net/9p/9pnet.ko
        kernel/drivers/bluetooth/hci_vhci.ko: kernel/net/bluetooth/bluetooth.ko

        """

    /// Debian 13's 6.12: virtio built in, fscache folded into netfs, modules xz-compressed but for those
    /// scripts/fetch-kernel decompressed.
    static let dep612 = """
        kernel/fs/netfs/netfs.ko:
        kernel/net/9p/9pnet.ko:
        kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko
        kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko
        kernel/drivers/bluetooth/hci_vhci.ko.xz: kernel/net/bluetooth/bluetooth.ko.xz kernel/lib/crc16.ko.xz

        """
    static let builtin612 = "kernel/drivers/virtio/virtio.ko\nkernel/drivers/virtio/virtio_pci.ko\n"

    private func names(_ order: [String]) -> [String] { order.map { String($0.split(separator: "/").last!) } }

    @Test func everyModuleLoadsAfterWhatItNeeds() throws {
        let order = try LabKernel.loadOrder(
            of: LabKernel.initramfsRoots, modulesDep: Self.dep61, builtin: "", isPlain: { _ in true })
        #expect(
            Set(names(order)) == [
                "virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci", "netfs",
                "fscache", "9pnet", "9pnet_virtio", "9p",
            ])
        for line in Self.dep61.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard let position = order.firstIndex(of: String(parts[0].dropLast(3))) else { continue }
            for dependency in parts.count > 1 ? parts[1].split(separator: " ") : [] {
                let index = try #require(order.firstIndex(of: String(dependency.dropLast(3))))
                #expect(index < position, "\(dependency) must load before \(parts[0])")
            }
        }
    }

    @Test func builtInModulesAreSkippedAndFscacheIsNotAskedForWhereNetfsHoldsIt() throws {
        let order = try LabKernel.loadOrder(
            of: LabKernel.initramfsRoots, modulesDep: Self.dep612, builtin: Self.builtin612, isPlain: { _ in true })
        #expect(names(order) == ["9pnet", "netfs", "9pnet_virtio", "9p"])
    }

    @Test func aCompressedOrMissingModuleIsRefusedNamingIt() {
        #expect(throws: LabKernel.ModuleProblem.self) {
            try LabKernel.loadOrder(
                of: LabKernel.initramfsRoots, modulesDep: Self.dep612, builtin: Self.builtin612,
                isPlain: { !$0.hasSuffix("netfs") })
        }
        do {
            _ = try LabKernel.loadOrder(
                of: LabKernel.initramfsRoots, modulesDep: Self.dep612, builtin: "", isPlain: { _ in true })
            Issue.record("virtio_pci is neither a module nor built in here, yet it was accepted")
        } catch {
            #expect(error.description == "no module virtio_pci in modules.dep, and it is not built in")
        }
    }

    @Test func theSeriesIsTheReleasesFirstTwoNumbers() {
        #expect(LabKernel.series(of: "6.1.0-41-amd64") == "6.1")
        #expect(LabKernel.series(of: "6.12.118+deb13-amd64") == "6.12")
        #expect(LabKernel.series(of: "7.2.13+deb14-amd64") == "7.2")
    }

    /// A cache as scripts/fetch-kernel leaves it, with one unpacked kernel.
    private func cache(with release: String) throws -> String {
        let root = NSTemporaryDirectory() + "blemu-kernels-\(UUID().uuidString)"
        let modules = "\(root)/\(release)/lib/modules/\(release)"
        try FileManager.default.createDirectory(atPath: modules + "/kernel", withIntermediateDirectories: true)
        try "image".write(toFile: "\(root)/\(release)/vmlinuz", atomically: true, encoding: .utf8)
        try Self.dep612.write(toFile: modules + "/modules.dep", atomically: true, encoding: .utf8)
        try "recipe 1\n".write(toFile: "\(root)/\(release)/.complete", atomically: true, encoding: .utf8)
        return root
    }

    @Test func aSeriesNamesTheUnpackedKernelAndAMissingOneNamesTheCommandThatUnpacksIt() throws {
        let root = try cache(with: "7.2.13+deb14-amd64")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let kernel = try LabKernel.resolve("7.2", cacheRoots: [root])
        #expect(kernel.release == "7.2.13+deb14-amd64" && !kernel.isSystem)
        #expect(kernel.image == "\(root)/7.2.13+deb14-amd64/vmlinuz")
        #expect(kernel.modules == "\(root)/7.2.13+deb14-amd64/lib/modules/7.2.13+deb14-amd64")
        #expect(try LabKernel.resolve("\(root)/7.2.13+deb14-amd64", cacheRoots: [root]) == kernel)
        do {
            _ = try LabKernel.resolve("6.12", cacheRoots: [root])
            Issue.record("6.12 is not unpacked, yet it resolved")
        } catch {
            let expected = "unpack it with scripts/fetch-kernel 6.12 or install blemu-lab"
            #expect(error.description.hasSuffix(expected), "\(error)")
        }
    }

    @Test func aNamedSystemThatIsNotInstalledSaysEveryCommandItNeeds() throws {
        let root = try cache(with: "7.2.13+deb14-amd64")
        defer { try? FileManager.default.removeItem(atPath: root) }
        do {
            _ = try LabSystem.resolve("debian-13", kernelCache: [root], bluezCache: [root + "/no-bluez"])
            Issue.record("debian-13 resolved without its kernel")
        } catch {
            #expect(error.description.contains("run scripts/fetch-kernel 6.12"), "\(error)")
        }
        do {
            _ = try LabSystem.resolve("current", kernelCache: [root], bluezCache: [root + "/no-bluez"])
            Issue.record("current resolved without BlueZ 5.87")
        } catch {
            #expect(error.description.hasSuffix("run scripts/build-bluez 5.87, or install blemu-lab"), "\(error)")
        }
        do {
            _ = try LabSystem.resolve("ubuntu", kernelCache: [root], bluezCache: [root])
            Issue.record("an unknown name resolved")
        } catch {
            #expect(error.description == "--system ubuntu: not a named system (debian-12, debian-13, current)")
        }
    }

    @Test func allButTheSmokeSuitesRunOnTheOldestAndNewestNamedSystemsUnlessChosen() {
        func system(_ name: String, kernel: String, bluez: String) -> LabSystem {
            LabSystem(
                name: name,
                kernel: LabKernel(release: kernel, image: "/k/\(kernel)", modules: "/k/\(kernel)/lib", isSystem: false),
                bluez: BlueZInstall(version: bluez, bluetoothd: "/b/\(bluez)/bluetoothd", toolDirectory: nil))
        }
        let named = LabSystem.names.map { system($0.name, kernel: $0.kernel + ".9", bluez: $0.bluez) }
        #expect(LabScenario.bounding(of: named, chosen: false).map(\.name) == ["debian-12", "current"])
        #expect(LabScenario.bounding(of: named, chosen: true) == named)
        #expect(LabScenario.bounding(of: [named[1]], chosen: false) == [named[1]])
        let handMade = [system("kernel 6.1 + BlueZ 5.82", kernel: "6.1.9", bluez: "5.82")]
        #expect(LabScenario.bounding(of: handMade, chosen: false) == handMade)
    }

    @Test func aCachedKernelsModulesTravelOnTheKernelCommandLineAndTheSystemsDoNot() {
        let configuration = LabConfiguration(resultsDirectory: "/work/results/r1")
        func commandLine(_ modules: String?) -> String {
            QEMUCommand(
                configuration: configuration, timeout: "/usr/bin/timeout", qemu: "/usr/bin/qemu-system-x86_64",
                kernel: "/k/vmlinuz", modules: modules, initramfs: "/i.cpio", script: "/work/results/r1/s.sh"
            ).kernelCommandLine
        }
        #expect(commandLine("/c/kernel/7.2/lib/modules/7.2").hasSuffix(" blemu.modules=/c/kernel/7.2/lib/modules/7.2"))
        #expect(!commandLine(nil).contains("blemu.modules"))
    }

    @Test func aKernelUnderTheVMsOwnTmpIsRefused() {
        var configuration = LabConfiguration(resultsDirectory: "/work/results/r1")
        configuration.kernel = LabKernel(
            release: "7.2.13+deb14-amd64", image: "/tmp/k/vmlinuz", modules: "/tmp/k/lib/modules/7.2.13+deb14-amd64",
            isSystem: false)
        #expect(configuration.validationProblem()?.hasPrefix("the kernel's modules /tmp/k/") == true)
    }
}
