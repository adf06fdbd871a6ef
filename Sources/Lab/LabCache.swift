import FoundationEssentials

/// Where the lab finds its BlueZ builds (`bluez/`) and kernels (`kernel/`), each entry stamped `.complete` when
/// whole: the per-user cache the lab's scripts fill (`scripts/build-bluez`, `scripts/fetch-kernel`), then the
/// `blemu-lab` Debian package's copy of the same (`scripts/package-lab`), so a machine with the two packages needs
/// no source build. The user's cache comes first: a build made here wins over the packaged one of the same version.
enum LabCache {
    /// Where the `blemu-lab` package installs the lab's BlueZ builds and kernels.
    static let packaged = "/usr/lib/blemu-lab"

    /// The directories holding `kind` ("bluez" or "kernel"), searched in order: the user's cache, then the package's.
    static func roots(_ kind: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        [root(environment: environment) + "/" + kind, packaged + "/" + kind]
    }

    /// `$BLEMU_CACHE`, else `$XDG_CACHE_HOME/blemu`, else `~/.cache/blemu` (the scripts use the same rule), else
    /// /var/tmp/blemu-cache.
    static func root(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let cache = environment["BLEMU_CACHE"], cache.hasPrefix("/") { return cache }
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg + "/blemu" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.cache/blemu" }
        return "/var/tmp/blemu-cache"
    }

    /// What the finished entries of `roots` hold (`make` of each entry's path, nil for a broken one) after `first`,
    /// one per `key` (the earliest wins: `first`, then the first root's), in numeric order of `key` after `first`.
    static func eachOnce<Value>(
        in roots: [String], after first: [Value], make: (String) -> Value?, key: (Value) -> String
    ) -> [Value] {
        var found = first
        let entries = roots.flatMap { root in finishedEntries(in: root).map { "\(root)/\($0)" } }
        for value in entries.compactMap(make) where !found.contains(where: { key($0) == key(value) }) {
            found.append(value)
        }
        let rest = found.dropFirst(first.count).sorted { NumericOrder.ascending(key($0), key($1)) }
        return first + rest
    }

    /// The entries of `directory` a script finished (a `.complete` stamp), in numeric order: "5.82" before "5.87".
    static func finishedEntries(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { FileManager.default.fileExists(atPath: "\(directory)/\($0)/.complete") }
            .sorted(by: NumericOrder.ascending)
    }
}
