/// A D-Bus object path such as `/org/example/app0`. Literals are not checked when written; a path is validated
/// before libdbus sees it (libdbus aborts the process on an invalid one), and an invalid one is a `MarshalError`.
public struct ObjectPath: Hashable, Sendable, Comparable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The path text.
    public let rawValue: String

    /// Wraps a path without checking it; use `init(validating:)` for text from outside.
    public init(stringLiteral value: String) { rawValue = value }

    /// Wraps a path that libdbus has already validated (a received message).
    init(unchecked value: String) { rawValue = value }

    /// Checks `text` against the specification's path grammar; throws `MarshalError.invalidValue` if it is not one.
    public init(validating text: String) throws(MarshalError) {
        guard ObjectPath.isValid(text) else { throw .invalidValue("invalid object path '\(text)'") }
        rawValue = text
    }

    /// The root path `/`.
    public static let root: ObjectPath = "/"

    /// Whether the text is a valid path: `/`, or `/`-separated non-empty elements of `[A-Za-z0-9_]`.
    public var isValid: Bool { ObjectPath.isValid(rawValue) }

    /// This path with one more element; an element with characters outside `[A-Za-z0-9_]` makes it invalid.
    public func appending(_ element: String) -> ObjectPath {
        ObjectPath(unchecked: rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// Whether `self` lies strictly below `ancestor` (`/a/b` is below `/a` and `/`, not below itself or `/ab`).
    public func isDescendant(of ancestor: ObjectPath) -> Bool {
        if ancestor.rawValue == "/" { return rawValue != "/" }
        return rawValue.hasPrefix(ancestor.rawValue) && rawValue.utf8.count > ancestor.rawValue.utf8.count
            && rawValue.utf8[rawValue.utf8.index(rawValue.utf8.startIndex, offsetBy: ancestor.rawValue.utf8.count)]
                == UInt8(ascii: "/")
    }

    /// The path text.
    public var description: String { rawValue }

    /// Orders paths by their text, so parents sort before their children.
    public static func < (lhs: ObjectPath, rhs: ObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    private static func isValid(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var previousWasSlash = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
                continue
            }
            previousWasSlash = false
            let isElementCharacter =
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
            if !isElementCharacter { return false }
        }
        return !previousWasSlash
    }
}
