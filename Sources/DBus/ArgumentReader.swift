internal import CDBus
import Glibc

/// Reads a call's arguments in order, typed, straight from the message: no `DBusValue` is built, and a string is
/// made only for a value asked for. It serves the per-request path of a method declared `decoding: .inPlace`, which
/// wants a few values out of its arguments (Benchmarks/README.md, "Options read in place").
///
/// A reader exists only inside `MethodCall.readArguments`: its iterator points into that call's message. It reads
/// no unix fd (a decoded one is a duplicate its reader must close; `MethodCall.arguments` keeps that contract).
public struct ArgumentReader: ~Copyable {
    /// Held so the iterator's message outlives the reader, however the reader was made.
    private let message: Message
    private var iterator = DBusMessageIter()
    private var isAtEnd: Bool
    /// Whether the argument under the iterator was read and is still to be stepped over: done when something
    /// after it is asked for, because stepping costs libdbus about 450 instructions and a handler often reads its
    /// last argument and stops.
    private var isRead = false

    init(_ message: Message) {
        self.message = message
        isAtEnd = dbus_message_iter_init(message.raw, &iterator) == 0
    }

    /// The type of the next argument, or nil after the last one.
    public var nextType: TypeCode? {
        mutating get {
            stepOverRead()
            guard !isAtEnd else { return nil }
            var copy = iterator
            return TypeCode(rawValue: UInt8(truncatingIfNeeded: dbus_message_iter_get_arg_type(&copy)))
        }
    }

    /// Reads an `ay` and moves past it; nil, without moving, when the next argument is something else.
    public mutating func bytes() -> [UInt8]? {
        guard nextType == .array,
            dbus_message_iter_get_element_type(&iterator) == TypeCode.byte.cValue
        else { return nil }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &sub)
        isRead = true
        return DBusValue.readBytes(&sub)
    }

    /// Reads an `a{sv}`, calling `body` with each entry in order, and moves past it; false, without moving or
    /// calling `body`, when the next argument is something else. An error `body` throws ends the reading there, and
    /// the reader stays on the dictionary.
    public mutating func vardict<E: Error>(_ body: (borrowing VardictEntry) throws(E) -> Void) throws(E) -> Bool {
        guard nextType == .array,
            dbus_message_iter_get_element_type(&iterator) == TypeCode.dictEntry.cValue
        else { return false }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &entries)
        // An empty array's sub-iterator is already at its end (type `\0`).
        while dbus_message_iter_get_arg_type(&entries) == TypeCode.dictEntry.cValue {
            var pair = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &pair)
            if dbus_message_iter_get_arg_type(&pair) == TypeCode.string.cValue {
                var key: UnsafePointer<CChar>? = nil
                dbus_message_iter_get_basic(&pair, &key)
                if let key, dbus_message_iter_next(&pair) != 0,
                    dbus_message_iter_get_arg_type(&pair) == TypeCode.variant.cValue
                {
                    var value = DBusMessageIter()
                    dbus_message_iter_recurse(&pair, &value)
                    try body(VardictEntry(key: key, value: value))
                }
            }
            guard dbus_message_iter_next(&entries) != 0 else { break }
        }
        isRead = true
        return true
    }

    /// Moves past the next argument, whatever it is.
    public mutating func skip() {
        stepOverRead()
        guard !isAtEnd else { return }
        isAtEnd = dbus_message_iter_next(&iterator) == 0
    }

    private mutating func stepOverRead() {
        guard isRead else { return }
        isRead = false
        isAtEnd = dbus_message_iter_next(&iterator) == 0
    }
}

/// One entry of an `a{sv}` met by `ArgumentReader.vardict`: its key compared in place, its value read by type. It
/// exists only for the call of the closure it is lent to.
public struct VardictEntry: ~Copyable {
    private let keyPointer: UnsafePointer<CChar>
    private let value: DBusMessageIter

    init(key: UnsafePointer<CChar>, value: DBusMessageIter) {
        keyPointer = key
        self.value = value
    }

    /// Whether the key is `name`, compared without building a string.
    public func hasKey(_ name: String) -> Bool {
        name.withCString { strcmp($0, keyPointer) == 0 }
    }

    /// The key, as a new string.
    public var key: String { String(cString: keyPointer) }

    /// The type inside the variant.
    public var type: TypeCode {
        var copy = value
        return TypeCode(rawValue: UInt8(truncatingIfNeeded: dbus_message_iter_get_arg_type(&copy)))
    }

    /// The value when it is a `q`; nil for any other type.
    public func uint16() -> UInt16? {
        basic(.uint16).map(\.u16)
    }

    /// The value when it is a `b`; nil for any other type.
    public func boolean() -> Bool? {
        basic(.boolean).map { $0.bool_val != 0 }
    }

    /// The value when it is an `s`; nil for any other type.
    public func string() -> String? {
        basic(.string).map { String(cString: $0.str) }
    }

    /// The value when it is an `o`; nil for any other type.
    public func objectPath() -> ObjectPath? { objectPath(reusing: nil) }

    /// The value when it is an `o`, and `last` itself when it names the same path (compared in place: a run of
    /// requests from one device names one path, and a new string of it costs ~650 instructions with its release);
    /// nil for any other type. `last` is a path read from a message before, so it holds no NUL byte.
    package func objectPath(reusing last: String?) -> ObjectPath? {
        basic(.objectPath).map { ObjectPath(unchecked: String(cString: $0.str, reusing: last)) }
    }

    private func basic(_ code: TypeCode) -> DBusBasicValue? {
        guard type == code else { return nil }
        var copy = value
        var basic = DBusBasicValue()
        dbus_message_iter_get_basic(&copy, &basic)
        return basic
    }
}
