import GATTModel

extension Characteristic {
    /// The `Flags` BlueZ's `GattCharacteristic1` takes: properties, then one security flag per operation.
    ///
    /// Core Bluetooth's `notifyEncryptionRequired` and `indicateEncryptionRequired` become `encrypt-notify`
    /// and `encrypt-indicate`, and the encryption permissions become `encrypt-read` and `encrypt-write`.
    public var bluezFlags: [BlueZFlag] {
        var flags = CharacteristicProperties.names.compactMap { entry -> BlueZFlag? in
            properties.contains(entry.property) ? BlueZFlag.flag(for: entry.property) : nil
        }
        let security = effectiveSecurity
        for operation in AttributeOperation.allCases {
            if let flag = BlueZFlag.flag(for: security[operation], on: operation) { flags.append(flag) }
        }
        return flags
    }
}

extension Descriptor {
    /// The flags BlueZ's `GattDescriptor1.Flags` takes for this descriptor.
    public var bluezFlags: [BlueZFlag] {
        var flags: [BlueZFlag] = []
        if permissions.allowsRead { flags.append(.read) }
        if permissions.allowsWrite { flags.append(.write) }
        var security = security
        if permissions.contains(.readEncryptionRequired) { security.require(.encrypted, for: .read) }
        if permissions.contains(.writeEncryptionRequired) { security.require(.encrypted, for: .write) }
        for operation in [AttributeOperation.read, .write] {
            if let flag = BlueZFlag.flag(for: security[operation], on: operation) { flags.append(flag) }
        }
        return flags
    }
}
