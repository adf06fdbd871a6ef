/// An error a peer or the bus sent us (an ERROR message), or one we synthesise the way libdbus does
/// (`NoReply` on timeout, `Disconnected` when the connection is gone). `name` is the D-Bus error name.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.UnknownMethod`.
    public var name: String
    /// The human-readable message (the error's first string argument), possibly empty.
    public var message: String

    /// Makes an error; the name is validated only when it is sent (an invalid one is replaced by `Failed`).
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// `name: message`.
    public var description: String { message.isEmpty ? name : "\(name): \(message)" }
}

/// The standard error names this module sends or synthesises; the only place they are spelled.
public enum StandardErrorName {
    /// A generic failure; also what a dropped (unanswered) call is answered with.
    public static let failed = "org.freedesktop.DBus.Error.Failed"
    /// No method of that name (in that interface) on the object.
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    /// No object at that path.
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    /// The object does not implement that interface.
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    /// The interface has no property of that name.
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    /// The arguments do not match the method's signature.
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    /// The property cannot be written.
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    /// No reply arrived before the call's timeout (what libdbus reports too).
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
    /// The connection is closed or was lost.
    public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
    /// The queried name has no owner (from the bus's GetNameOwner).
    public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
}

/// Why a value could not be marshalled or a received value was not the expected type.
public enum MarshalError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A value had signature `actual` where `expected` was required (`*` matches any type).
    case typeMismatch(expected: Signature, actual: Signature)
    /// A value or name libdbus would reject (invalid path, signature, name, string with NUL, empty struct).
    case invalidValue(String)
    /// libdbus could not allocate memory for the message.
    case outOfMemory

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .typeMismatch(let expected, let actual): "type mismatch: expected '\(expected)', got '\(actual)'"
        case .invalidValue(let what): what
        case .outOfMemory: "out of memory while building a D-Bus message"
        }
    }
}

/// A mistake in what was asked to be exported (invalid or duplicate names); never caused by a peer.
public struct ExportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong and where.
    public var description: String
    /// Wraps the explanation.
    public init(_ description: String) { self.description = description }
}
