/// Our ends of the `AcquireWrite` sockets, by characteristic id (5.66 keeps one write socket per characteristic).
/// Taking a stream out is the caller's cue to close it. (The notify sockets live with the table that names them,
/// `NotifyRoutes`.)
struct WriteStreams: Sendable {
    /// Write streams by characteristic id.
    private var writes: [String: AcquiredSocket] = [:]

    /// Whether the characteristic's writes stream through a socket.
    func isWriteAcquired(_ id: String) -> Bool { writes[id] != nil }

    /// Keeps the characteristic's write stream; returns the one it replaces.
    mutating func setWrite(_ socket: AcquiredSocket, for id: String) -> AcquiredSocket? {
        writes.updateValue(socket, forKey: id)
    }

    /// Takes out the characteristic's write stream.
    mutating func removeWrite(_ id: String) -> AcquiredSocket? { writes.removeValue(forKey: id) }

    /// Takes out every write stream, by characteristic id in order.
    mutating func removeWrites() -> [(id: String, socket: AcquiredSocket)] {
        defer { writes.removeAll() }
        return writes.sorted { $0.key < $1.key }.map { (id: $0.key, socket: $0.value) }
    }
}
