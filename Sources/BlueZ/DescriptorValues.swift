import DBus
import GATTModel

/// The descriptors' values as centrals see them: the profile's value until a central writes one, then what it
/// wrote, until the application is registered again. Descriptors never reach the manager (its request model covers
/// characteristics), so their reads and writes are answered here; bluetoothd has already checked the link's
/// security against the descriptor's `encrypt-*` flags before it calls us (docs/bluez.md, "Security and pairing").
/// A value with no I/O: `BlueZBackend` answers with what it returns.
struct DescriptorValues: Sendable, Equatable {
    /// What centrals wrote, by the descriptor's exported path.
    private var written: [ObjectPath: [UInt8]] = [:]

    /// The value from `offset` on, or the ATT error a central gets: Read Not Permitted for a descriptor without read
    /// permission, Invalid Offset past its end.
    func read(_ descriptor: Descriptor, at path: ObjectPath, offset: Int) -> Result<[UInt8], ATTError> {
        guard descriptor.permissions.allowsRead else { return .failure(.readNotPermitted) }
        let value = written[path] ?? descriptor.value
        guard offset <= value.count else { return .failure(.invalidOffset) }
        return .success(Array(value[offset...]))
    }

    /// Writes `value` at `offset` (a prepared write's part lands where it says, the rest of the value stays); nil
    /// when the write is accepted, else the ATT error: Write Not Permitted, Invalid Offset past the current end,
    /// Invalid Attribute Value Length past 512 bytes. `authorizingOnly` (bluetoothd's `prepare-authorize`) checks
    /// without writing.
    mutating func write(
        _ value: [UInt8], to descriptor: Descriptor, at path: ObjectPath, offset: Int, authorizingOnly: Bool
    ) -> ATTError? {
        guard descriptor.permissions.allowsWrite else { return .writeNotPermitted }
        var current = written[path] ?? descriptor.value
        guard offset <= current.count else { return .invalidOffset }
        guard offset + value.count <= Characteristic.maximumValueLength else { return .invalidAttributeValueLength }
        if authorizingOnly { return nil }
        current.replaceSubrange(offset..<min(current.count, offset + value.count), with: value)
        written[path] = current
        return nil
    }

    /// Forgets every write: the application is registered anew with the profile's values.
    mutating func reset() {
        written.removeAll()
    }
}
