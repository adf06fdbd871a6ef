internal import CDBus
import Glibc

// Marshalling through libdbus's iterators (dbus_message_iter_*), since its variadic append_args is not
// importable. Values are checked in full first (`check`), so appending meets no invalid data: libdbus aborts
// the process on invalid paths, signatures or strings instead of returning an error.
extension DBusValue {
    /// Throws if libdbus would reject any part of the value.
    func check() throws(MarshalError) {
        switch self {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .bytes: return
        case .unixFD(let fd):
            // libdbus duplicates the fd while appending and reports a failure as if memory ran out: say why.
            if fcntl(fd.rawValue, F_GETFD) < 0 { throw .invalidValue("\(fd) is not an open file descriptor") }
        case .string(let text):
            if text.utf8.contains(0) { throw .invalidValue("string contains NUL: \(text.debugDescription)") }
        case .objectPath(let path): try Names.checkPath(path)
        case .signature(let signature):
            if !signature.isValid { throw .invalidValue("invalid signature '\(signature)'") }
        case .array(let element, let items):
            guard element.isSingleCompleteType else { throw .invalidValue("invalid array element type '\(element)'") }
            for item in items {
                try item.check()
                if item.signature != element { throw .typeMismatch(expected: element, actual: item.signature) }
            }
        case .dictionary(let key, let value, let entries):
            guard let keyCode = key.first, key.rawValue.utf8.count == 1, keyCode.isBasic else {
                throw .invalidValue("dictionary key type '\(key)' is not a basic type")
            }
            guard value.isSingleCompleteType else { throw .invalidValue("invalid dictionary value type '\(value)'") }
            for entry in entries {
                try entry.key.check()
                try entry.value.check()
                if entry.key.signature != key { throw .typeMismatch(expected: key, actual: entry.key.signature) }
                if entry.value.signature != value {
                    throw .typeMismatch(expected: value, actual: entry.value.signature)
                }
            }
        case .structure(let fields):
            if fields.isEmpty { throw .invalidValue("a struct needs at least one field") }
            for field in fields { try field.check() }
        case .variant(let inner):
            try inner.check()
            // The specification limits nesting to 64 levels; libdbus rejects deeper signatures.
            if !inner.signature.isSingleCompleteType {
                throw .invalidValue("variant content has invalid signature '\(inner.signature)'")
            }
        }
    }

    /// Whether a unix fd occurs anywhere inside (such a message cannot go over a connection without fd passing).
    var containsUnixFD: Bool {
        switch self {
        case .unixFD: true
        case .array(_, let items): items.contains { $0.containsUnixFD }
        case .dictionary(_, _, let entries): entries.contains { $0.key.containsUnixFD || $0.value.containsUnixFD }
        case .structure(let fields): fields.contains { $0.containsUnixFD }
        case .variant(let inner): inner.containsUnixFD
        default: false
        }
    }

    /// Appends a value already passed `check()`; false only when libdbus is out of memory.
    func append(to iterator: inout DBusMessageIter) -> Bool {
        switch self {
        case .byte(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.byte.cValue, &v) != 0
        case .boolean(let b):
            var v: dbus_bool_t = b ? 1 : 0
            return dbus_message_iter_append_basic(&iterator, TypeCode.boolean.cValue, &v) != 0
        case .int16(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.int16.cValue, &v) != 0
        case .uint16(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.uint16.cValue, &v) != 0
        case .int32(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.int32.cValue, &v) != 0
        case .uint32(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.uint32.cValue, &v) != 0
        case .int64(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.int64.cValue, &v) != 0
        case .uint64(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.uint64.cValue, &v) != 0
        case .double(var v): return dbus_message_iter_append_basic(&iterator, TypeCode.double.cValue, &v) != 0
        case .unixFD(let fd):
            var v = fd.rawValue
            return dbus_message_iter_append_basic(&iterator, TypeCode.unixFD.cValue, &v) != 0
        case .string(let text): return Self.appendString(text, .string, to: &iterator)
        case .objectPath(let path): return Self.appendString(path.rawValue, .objectPath, to: &iterator)
        case .signature(let signature): return Self.appendString(signature.rawValue, .signature, to: &iterator)
        case .bytes(let bytes):
            return Self.container(.array, "y", &iterator) { sub in
                bytes.isEmpty
                    || bytes.withUnsafeBufferPointer { buffer in
                        var base = buffer.baseAddress
                        return dbus_message_iter_append_fixed_array(
                            &sub, TypeCode.byte.cValue, &base, Int32(buffer.count)) != 0
                    }
            }
        case .array(let element, let items):
            return Self.container(.array, element.rawValue, &iterator) { sub in
                items.allSatisfy { $0.append(to: &sub) }
            }
        case .dictionary(let key, let value, let entries):
            return Self.container(.array, "{" + key.rawValue + value.rawValue + "}", &iterator) { sub in
                entries.allSatisfy { entry in
                    Self.container(.dictEntry, nil, &sub) { pair in
                        entry.key.append(to: &pair) && entry.value.append(to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return Self.container(.structure, nil, &iterator) { sub in fields.allSatisfy { $0.append(to: &sub) } }
        case .variant(let inner):
            return Self.container(.variant, inner.signature.rawValue, &iterator) { sub in inner.append(to: &sub) }
        }
    }

    private static func appendString(_ text: String, _ code: TypeCode, to iterator: inout DBusMessageIter) -> Bool {
        text.withCString { pointer in
            var p: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, code.cValue, &p) != 0
        }
    }

    /// Opens a container, fills it, and closes it, or abandons it if filling failed (libdbus requires one of the two).
    private static func container(
        _ code: TypeCode, _ contents: String?, _ iterator: inout DBusMessageIter,
        _ fill: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let contents {
            opened = contents.withCString { dbus_message_iter_open_container(&iterator, code.cValue, $0, &sub) != 0 }
        } else {
            opened = dbus_message_iter_open_container(&iterator, code.cValue, nil, &sub) != 0
        }
        guard opened else { return false }
        guard fill(&sub) else {
            dbus_message_iter_abandon_container(&iterator, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iterator, &sub) != 0
    }

    /// Reads the value under the iterator, or nil at the end of the arguments.
    static func read(from iterator: inout DBusMessageIter) -> DBusValue? {
        let code = TypeCode(rawValue: UInt8(truncatingIfNeeded: dbus_message_iter_get_arg_type(&iterator)))
        var basic = DBusBasicValue()
        switch code {
        case .invalid: return nil
        case .array: return readArray(&iterator)
        case .variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return read(from: &sub).map(DBusValue.variant)
        case .structure:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .structure(readAll(&sub))
        default:
            break
        }
        dbus_message_iter_get_basic(&iterator, &basic)
        switch code {
        case .byte: return .byte(basic.byt)
        case .boolean: return .boolean(basic.bool_val != 0)
        case .int16: return .int16(basic.i16)
        case .uint16: return .uint16(basic.u16)
        case .int32: return .int32(basic.i32)
        case .uint32: return .uint32(basic.u32)
        case .int64: return .int64(Int64(basic.i64))
        case .uint64: return .uint64(UInt64(basic.u64))
        case .double: return .double(basic.dbl)
        case .unixFD: return .unixFD(UnixFD(basic.fd))
        case .string: return .string(String(cString: basic.str))
        case .objectPath: return .objectPath(ObjectPath(unchecked: String(cString: basic.str)))
        case .signature: return .signature(Signature(unchecked: String(cString: basic.str)))
        default: return nil
        }
    }

    private static func readAll(_ iterator: inout DBusMessageIter) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = read(from: &iterator) {
            values.append(value)
            guard dbus_message_iter_next(&iterator) != 0 else { break }
        }
        return values
    }

    private static func readArray(_ iterator: inout DBusMessageIter) -> DBusValue {
        let elementCode = TypeCode(rawValue: UInt8(truncatingIfNeeded: dbus_message_iter_get_element_type(&iterator)))
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &sub)
        if elementCode == .byte { return .bytes(readBytes(&sub)) }
        // A value read from the wire has the wire's type, so a non-empty container's element type is its first
        // element's signature; only an empty one asks libdbus for the signature (a string it allocates, per call).
        if elementCode == .dictEntry {
            var entries: [DictionaryEntry] = []
            // Room for a small dictionary (a signal's changed properties, a client's options) in one allocation instead
            // of three growths.
            entries.reserveCapacity(8)
            while dbus_message_iter_get_arg_type(&sub) == TypeCode.dictEntry.cValue {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                if let key = read(from: &pair), dbus_message_iter_next(&pair) != 0, let value = read(from: &pair) {
                    entries.append(DictionaryEntry(key, value))
                }
                guard dbus_message_iter_next(&sub) != 0 else { break }
            }
            if let first = entries.first {
                return .dictionary(key: first.key.signature, value: first.value.signature, entries)
            }
            let types = Signature(unchecked: String(elementSignature(&iterator).rawValue.dropFirst().dropLast()))
                .completeTypes
            return .dictionary(key: types.first ?? "s", value: types.count > 1 ? types[1] : "v", [])
        }
        let items = readAll(&sub)
        return .array(element: items.first?.signature ?? elementSignature(&iterator), items)
    }

    /// The bytes of an `ay`, read in one copy through `sub`, the iterator recursed into the array.
    static func readBytes(_ sub: inout DBusMessageIter) -> [UInt8] {
        var base: UnsafeRawPointer? = nil
        var count: Int32 = 0
        dbus_message_iter_get_fixed_array(&sub, &base, &count)
        guard let base, count > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: Int(count)))
    }

    /// The element type of the array under `iterator`, from the signature libdbus allocates for it.
    private static func elementSignature(_ iterator: inout DBusMessageIter) -> Signature {
        let full = dbus_message_iter_get_signature(&iterator)
        let signature = full.map { String(cString: $0) } ?? "a"
        dbus_free(full)
        return Signature(unchecked: String(signature.dropFirst()))
    }
}
