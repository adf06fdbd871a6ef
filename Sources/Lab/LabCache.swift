import Foundation

/// The per-user cache the lab's scripts fill: `scripts/build-bluez` into `bluez/`, `scripts/fetch-kernel` into
/// `kernel/`, each entry stamped `.complete` when whole.
enum LabCache {
    /// `$BLEMU_CACHE`, else `$XDG_CACHE_HOME/blemu`, else `~/.cache/blemu` (the scripts use the same rule), else
    /// /var/tmp/blemu-cache.
    static func root(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let cache = environment["BLEMU_CACHE"], cache.hasPrefix("/") { return cache }
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg + "/blemu" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.cache/blemu" }
        return "/var/tmp/blemu-cache"
    }

    /// The entries of `directory` a script finished (a `.complete` stamp), in numeric order: "5.82" before "5.87".
    static func finishedEntries(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { FileManager.default.fileExists(atPath: "\(directory)/\($0)/.complete") }
            .sorted { $0.compare($1, options: .numeric) == .orderedAscending }
    }
}
