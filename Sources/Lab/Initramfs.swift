import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The VM's initramfs: static busybox, the virtio and 9p modules, and `GuestInit`'s script as /init.
///
/// Written as an uncompressed newc cpio archive (the kernel reads it as is; gzip would only cost decompression time
/// under TCG), cached by kernel version, busybox identity and script content. Building fails when a file cannot
/// be read or the cache directory cannot be written.
struct Initramfs {
    /// One archive member.
    enum Entry {
        case directory(String)
        case file(String, Data, executable: Bool)
        /// A character device: the kernel needs /dev/console to give PID 1 its standard streams.
        case characterDevice(String, major: UInt32, minor: UInt32)
    }

    /// The archive's members, in order: parents before children.
    var entries: [Entry]

    /// The rig's initramfs for `kernel`, with `busybox` and the init script: the modules that mount the host's
    /// root, in /modules, and their load order in /modules/order (`GuestInit` reads it).
    static func rig(kernel: LabKernel, busybox: String, initScript: String) throws -> Initramfs {
        var entries: [Entry] = ["/bin", "/dev", "/proc", "/sys", "/newroot", "/modules"].map { .directory($0) }
        entries.append(.characterDevice("/dev/console", major: 5, minor: 1))
        entries.append(.file("/bin/busybox", try Data(contentsOf: URL(fileURLWithPath: busybox)), executable: true))
        let modules: [String]
        do { modules = try kernel.initramfsModules() } catch {
            throw LabError.prerequisitesMissing("\(kernel): \(error.description)")
        }
        var names: [String] = []
        for module in modules {
            guard let path = kernel.moduleFile(module) else {
                throw LabError.prerequisitesMissing("kernel module \(module).ko for \(kernel.release)")
            }
            let name = module.split(separator: "/").last.map(String.init) ?? module
            names.append(name)
            entries.append(
                .file("/modules/\(name).ko", try Data(contentsOf: URL(fileURLWithPath: path)), executable: false))
        }
        entries.append(.file("/modules/order", Data((names.joined(separator: "\n") + "\n").utf8), executable: false))
        entries.append(.file("/init", Data(initScript.utf8), executable: true))
        return Initramfs(entries: entries)
    }

    /// The newc ("070701") cpio bytes, ending with the TRAILER!!! member.
    func archive() -> Data {
        var data = Data()
        var inode: UInt32 = 1
        func append(name: String, mode: UInt32, body: Data, rdevMajor: UInt32 = 0, rdevMinor: UInt32 = 0) {
            // cpio names are relative; "." prefixes are not needed by the kernel's unpacker.
            let path = name.hasPrefix("/") ? String(name.dropFirst()) : name
            let nameBytes = Data(path.utf8) + [0]
            let fields: [UInt32] = [
                inode, mode, 0, 0, mode & 0o170000 == 0o040000 ? 2 : 1, 0, UInt32(body.count), 0, 0,
                rdevMajor, rdevMinor, UInt32(nameBytes.count), 0,
            ]
            inode += 1
            var header = "070701"
            for field in fields {
                let hex = String(field, radix: 16, uppercase: true)
                header += String(repeating: "0", count: 8 - hex.count) + hex
            }
            data.append(Data(header.utf8))
            data.append(nameBytes)
            data.append(contentsOf: [UInt8](repeating: 0, count: (4 - (110 + nameBytes.count) % 4) % 4))
            data.append(body)
            data.append(contentsOf: [UInt8](repeating: 0, count: (4 - body.count % 4) % 4))
        }
        for entry in entries {
            switch entry {
            case .directory(let name): append(name: name, mode: 0o040755, body: Data())
            case .file(let name, let body, let executable):
                append(name: name, mode: executable ? 0o100755 : 0o100644, body: body)
            case .characterDevice(let name, let major, let minor):
                append(name: name, mode: 0o020600, body: Data(), rdevMajor: major, rdevMinor: minor)
            }
        }
        append(name: "TRAILER!!!", mode: 0, body: Data())
        return data
    }

    /// The path of the cached archive for these inputs, writing it first when missing; the write is atomic (a
    /// rename), so concurrent runs never read half an archive.
    static func cached(
        in directory: String, kernel: LabKernel, busybox: String, initScript: String
    ) throws -> String {
        let files = FileManager.default
        let attributes = try files.attributesOfItem(atPath: busybox)
        let busyboxIdentity =
            "\((attributes[.size] as? Int) ?? 0)-\(Int((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0))"
        // The image's path is in the key: a release unpacked into the cache and the same release installed would
        // share a name but not their modules' place.
        let key = "\(kernel.release)-\(busyboxIdentity)-\(fnv1a(initScript + kernel.image))"
        let path = "\(directory)/initramfs-\(key).cpio"
        if files.fileExists(atPath: path) { return path }
        try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let archive = try rig(kernel: kernel, busybox: busybox, initScript: initScript).archive()
        // Unique per build, not per process: the lab suites of both BlueZ versions boot at once in one test
        // process, and with a fresh cache both build this archive; each renames its own file over the other's.
        let temporary = "\(path).\(ProcessInfo.processInfo.processIdentifier).\(UUID().uuidString.prefix(8)).partial"
        try archive.write(to: URL(fileURLWithPath: temporary))
        if rename(temporary, path) != 0 {
            try? files.removeItem(atPath: temporary)
            throw LabError.io("cannot move \(temporary) to \(path): errno \(errno)")
        }
        return path
    }

    /// A stable 64-bit FNV-1a hash in hex: Swift's `hashValue` is seeded per process, unusable as a cache key.
    static func fnv1a(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
