import Foundation

/// Waits for another process to write a file: woken by inotify each time the file changes, never by a timer, so a
/// test goes on the moment the line it needs is there and a failing one waits only its `limit`.
enum FileWait {
    /// Whether the text of `path` came to satisfy `holds` within `limit`; the file may not exist yet when asked.
    /// The wait runs on a thread of its own, off the cooperative pool.
    static func until(
        _ path: String, within limit: Duration = .seconds(10), _ holds: @escaping @Sendable (String) -> Bool
    ) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: wait(path, limit, holds)) }.start()
        }
    }

    /// Whether `path`'s text ever contains `text` within `limit`.
    static func until(_ path: String, contains text: String, within limit: Duration = .seconds(10)) async -> Bool {
        await until(path, within: limit) { $0.contains(text) }
    }

    /// `path` must be absolute and its directory must exist (the file need not). Should inotify refuse (its
    /// per-user instance limit, 128 by default), the wait still lasts its `limit`, checking every 100 ms.
    private static func wait(_ path: String, _ limit: Duration, _ holds: (String) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + limit
        func text() -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        // The directory is watched, not the file: the file may be created after the wait begins.
        let directory = (path as NSString).deletingLastPathComponent
        let events = UInt32(IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO)
        var watch = inotify_init1(Int32(IN_CLOEXEC))
        if watch >= 0 && inotify_add_watch(watch, directory, events) < 0 {
            close(watch)
            watch = -1
        }
        defer { if watch >= 0 { close(watch) } }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            // Checked after the watch is in place, so a write between the check and the poll still wakes it.
            if holds(text()) { return true }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            // poll(2) of no descriptor (-1 is skipped) is a plain sleep: the fallback's 100 ms.
            var descriptor = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
            let cap = watch >= 0 ? Double(Int32.max) : 100
            let milliseconds = Int32(min((left / .milliseconds(1)).rounded(.up), cap))
            if poll(&descriptor, 1, milliseconds) > 0 { _ = read(watch, &buffer, buffer.count) }
        }
    }
}
