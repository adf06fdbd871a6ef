import Foundation

/// Follows a file another process appends to (the VM writes `command.log` through the results share): each call to
/// `next()` returns the bytes added since the last one, reading only those. A file that does not exist yet, or that
/// shrank (a fresh boot recreated it), reads from its start.
struct FileFollower {
    /// The file followed.
    let path: String
    private var offset: UInt64 = 0

    /// A follower at the start of `path`.
    init(path: String) { self.path = path }

    /// The bytes appended since the last call; empty when there are none or the file cannot be read.
    mutating func next() -> Data {
        guard let handle = FileHandle(forReadingAtPath: path) else { return Data() }
        defer { try? handle.close() }
        guard let end = try? handle.seekToEnd() else { return Data() }
        if end < offset { offset = 0 }
        guard end > offset, (try? handle.seek(toOffset: offset)) != nil,
            let data = try? handle.read(upToCount: Int(end - offset))
        else { return Data() }
        offset += UInt64(data.count)
        return data
    }
}
