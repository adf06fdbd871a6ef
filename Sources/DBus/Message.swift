internal import CDBus

/// Owns one reference to a libdbus message and releases it on deinit.
///
/// `@unchecked Sendable` invariant: a message is mutated (arguments appended) only by the thread that created it,
/// before the `Message` is shared; afterwards it is only read or handed to libdbus, whose message reference
/// counts are atomic, so sharing the reference across threads is safe.
final class Message: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes over a reference the caller already owns (from a `dbus_message_new_*` function).
    init(adopting raw: OpaquePointer) { self.raw = raw }

    /// Adds a reference of our own (for a message libdbus lends to a filter callback).
    init(retaining raw: OpaquePointer) {
        self.raw = dbus_message_ref(raw)
    }

    deinit { dbus_message_unref(raw) }

    /// A method call; throws `MarshalError.invalidValue` for an invalid name or path (libdbus would abort).
    static func methodCall(
        destination: String?, path: ObjectPath, interface: String?, member: String
    ) throws(MarshalError) -> Message {
        if let destination { try Names.checkBusName(destination) }
        try Names.checkPath(path)
        if let interface { try Names.checkInterface(interface) }
        try Names.checkMember(member)
        let raw = path.rawValue.withCString { pathPointer in
            member.withCString { memberPointer in
                withOptionalCString(destination) { destinationPointer in
                    withOptionalCString(interface) { interfacePointer in
                        dbus_message_new_method_call(destinationPointer, pathPointer, interfacePointer, memberPointer)
                    }
                }
            }
        }
        guard let raw else { throw .outOfMemory }
        return Message(adopting: raw)
    }

    /// A signal; throws `MarshalError.invalidValue` for an invalid name or path.
    static func signal(path: ObjectPath, interface: String, member: String) throws(MarshalError) -> Message {
        try Names.checkPath(path)
        try Names.checkInterface(interface)
        try Names.checkMember(member)
        let raw = path.rawValue.withCString { p in
            interface.withCString { i in member.withCString { m in dbus_message_new_signal(p, i, m) } }
        }
        guard let raw else { throw .outOfMemory }
        return Message(adopting: raw)
    }

    /// The METHOD_RETURN for `self`; nil only when out of memory.
    func methodReturn() -> Message? {
        dbus_message_new_method_return(raw).map(Message.init(adopting:))
    }

    /// The ERROR reply to `self`; an invalid error name is replaced by `Failed` (libdbus would abort on it).
    func errorReply(name: String, message text: String) -> Message? {
        let validName = (try? Names.checkErrorName(name)) != nil ? name : StandardErrorName.failed
        let cleanText = text.utf8.contains(0) ? String(text.split(separator: "\0").joined()) : text
        return validName.withCString { n in cleanText.withCString { t in dbus_message_new_error(raw, n, t) } }
            .map(Message.init(adopting:))
    }

    var type: Int32 { dbus_message_get_type(raw) }
    var path: ObjectPath? { dbus_message_get_path(raw).map { ObjectPath(unchecked: String(cString: $0)) } }
    var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    var signature: Signature { Signature(unchecked: dbus_message_get_signature(raw).map { String(cString: $0) } ?? "") }
    /// Compares the signature without building a Swift string (the per-call check on the hot path).
    func hasSignature(_ signature: Signature) -> Bool {
        signature.rawValue.withCString { dbus_message_has_signature(raw, $0) != 0 }
    }
    var expectsReply: Bool { dbus_message_get_no_reply(raw) == 0 }
    var serial: UInt32 { dbus_message_get_serial(raw) }
    var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }

    /// Sets the no-reply flag: the receiver must not answer.
    func setNoReply() { dbus_message_set_no_reply(raw, 1) }

    /// Appends `values` after checking all of them, so a bad value leaves the message untouched.
    func append(_ values: [DBusValue]) throws(MarshalError) {
        for value in values { try value.check() }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iterator)
        for value in values {
            guard value.append(to: &iterator) else { throw .outOfMemory }
        }
    }

    /// Reads every argument; libdbus validated the message on receipt, so this cannot meet malformed data.
    func arguments() -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iterator) != 0 else { return [] }
        var values: [DBusValue] = []
        // A method call's arguments are few: one allocation, not a growth per argument.
        values.reserveCapacity(4)
        repeat {
            guard let value = DBusValue.read(from: &iterator) else { break }
            values.append(value)
        } while dbus_message_iter_next(&iterator) != 0
        return values
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// Name checks done in Swift before libdbus sees a name: libdbus treats an invalid one as a programming error
/// and aborts the process, which outside input must never be able to cause.
enum Names {
    static func checkPath(_ path: ObjectPath) throws(MarshalError) {
        guard path.isValid else { throw .invalidValue("invalid object path '\(path)'") }
    }
    static func checkInterface(_ name: String) throws(MarshalError) {
        guard valid(name, dbus_validate_interface) else { throw .invalidValue("invalid interface name '\(name)'") }
    }
    static func checkMember(_ name: String) throws(MarshalError) {
        guard valid(name, dbus_validate_member) else { throw .invalidValue("invalid member name '\(name)'") }
    }
    static func checkErrorName(_ name: String) throws(MarshalError) {
        guard valid(name, dbus_validate_error_name) else { throw .invalidValue("invalid error name '\(name)'") }
    }
    static func checkBusName(_ name: String) throws(MarshalError) {
        guard valid(name, dbus_validate_bus_name) else { throw .invalidValue("invalid bus name '\(name)'") }
    }
    private static func valid(
        _ name: String, _ validate: (UnsafePointer<CChar>?, UnsafeMutablePointer<CDBus.DBusError>?) -> dbus_bool_t
    ) -> Bool {
        !name.utf8.contains(0) && name.withCString { validate($0, nil) != 0 }
    }
}
