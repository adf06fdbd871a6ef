import FoundationEssentials
import LocalIO

/// Follows a file another process appends to (the VM writes `command.log` through the results share): each call to
/// `next()` returns the bytes added since the last one, reading only those. A file that does not exist yet, or that
/// shrank (a fresh boot recreated it), reads from its start.
struct FileFollower {
    /// The file followed.
    let path: String
    private var offset = 0

    /// A follower at the start of `path`.
    init(path: String) { self.path = path }

    /// The bytes appended since the last call; empty when there are none or the file cannot be read.
    mutating func next() -> Data {
        guard var chunk = try? LocalFile.bytes(atPath: path, from: offset, upTo: .max) else { return Data() }
        if chunk.fileSize < offset {
            offset = 0
            guard let whole = try? LocalFile.bytes(atPath: path, from: 0, upTo: .max) else { return Data() }
            chunk = whole
        }
        offset += chunk.bytes.count
        return Data(chunk.bytes)
    }
}
