internal import CDBus
import Glibc

/// The names of the last call received, reused by the next call where they are the same. Nearly every call an
/// application gets comes from bluetoothd, to one of two interfaces, and mostly the same method and object again:
/// a name compared in place costs a few dozen instructions, a new string about 250 and its release more
/// (Benchmarks/README.md, "Options read in place"). Used on the loop thread only.
struct CallNames {
    private var sender: String?
    private var path: String?
    private var interface: String?
    private var member: String?

    /// Where `message` goes and from whom, each name the last call's string when it is the same name.
    mutating func context(of message: Message) -> CallContext {
        CallContext(
            sender: Self.reuse(dbus_message_get_sender(message.raw), &sender),
            path: ObjectPath(unchecked: Self.reuse(dbus_message_get_path(message.raw), &path) ?? "/"),
            interface: Self.reuse(dbus_message_get_interface(message.raw), &interface),
            member: Self.reuse(dbus_message_get_member(message.raw), &member) ?? "")
    }

    private static func reuse(_ name: UnsafePointer<CChar>?, _ last: inout String?) -> String? {
        guard let name else { return nil }
        let made = String(cString: name, reusing: last)
        last = made
        return made
    }
}
