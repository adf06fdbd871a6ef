/// A unix file descriptor carried by a `h` argument. Ownership: appending one to a message duplicates it (the
/// caller keeps and still closes its own); one read from a received message is a fresh duplicate the reader owns
/// and must close. Passing fds fails with a D-Bus error if the bus or peer does not support fd passing.
public struct UnixFD: Hashable, Sendable, CustomStringConvertible {
    /// The descriptor number.
    public let rawValue: Int32

    /// Wraps a descriptor number; nothing is checked or duplicated until it is appended to a message.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// `fd N`.
    public var description: String { "fd \(rawValue)" }
}
