import GATTModel

/// Services, characteristics and descriptors.
extension ProfileDecoder {
    static let serviceKeys = ["id", "uuid", "primary", "includes", "characteristics"]
    static let characteristicKeys = [
        "id", "uuid", "properties", "permissions", "encryption", "descriptors", "value", "initial", "max-length",
        "fields",
    ]

    /// Decodes `services`, then resolves `includes` (which may name services declared later).
    mutating func decodeServices(_ node: YAMLNode) -> [Service] {
        guard let items = sequence(node, in: "`services`") else { return [] }
        var services: [Service] = []
        var includes: [(service: Int, nodes: [YAMLNode])] = []
        for item in items {
            guard let (service, includeNodes) = decodeService(item) else { continue }
            includes.append((services.count, includeNodes))
            services.append(service)
        }
        let serviceIDs = services.map(\.id)
        for (index, nodes) in includes {
            for node in nodes {
                guard let id = string(node, for: "an included service id") else { continue }
                guard serviceIDs.contains(id) else {
                    report(
                        node, "`includes` names unknown service `\(id)`",
                        hint: EditDistance.hint(for: id, in: serviceIDs))
                    continue
                }
                if id == services[index].id {
                    report(node, "service `\(id)` includes itself")
                    continue
                }
                services[index].includedServiceIDs.append(id)
            }
        }
        return services
    }

    /// Records an id in the profile's single namespace (services and characteristics), reporting duplicates.
    mutating func declareID(_ node: YAMLNode, for what: String) -> String? {
        guard let id = string(node, for: "\(what) `id`") else { return nil }
        if let first = ids[id] {
            report(node, "duplicate id `\(id)`; first declared at \(first.line):\(first.column)")
            return nil
        }
        ids[id] = node.mark
        if what == "service" { serviceIDs.insert(id) }
        return id
    }

    private mutating func decodeService(_ node: YAMLNode) -> (Service, [YAMLNode])? {
        guard let map = fields(node, in: "service", allowed: Self.serviceKeys, required: ["id", "uuid"]) else {
            return nil
        }
        let id = map["id"].flatMap { declareID($0, for: "service") }
        var uuid = map["uuid"].flatMap { self.uuid($0, kind: .service, for: "service") }
        // bluetoothd registers GAP and GATT itself and fails an application that declares them (docs/bluez.md, "Seen in
        // the lab").
        if let found = uuid, found == .genericAccess || found == .genericAttribute, let at = map["uuid"] {
            report(at, "service \(describe(found)) belongs to bluetoothd; remove it")
            uuid = nil
        }
        var isPrimary = true
        if let value = map["primary"], let flag = boolean(value, for: "`primary`") { isPrimary = flag }
        // Remembered even if the service fails, so the advertisement does not report it as unpublished too.
        if let uuid, isPrimary { primaryServiceUUIDs.insert(uuid) }
        if let id, let uuid { serviceUUIDsByID[id] = uuid }
        var includes: [YAMLNode] = []
        if let value = map["includes"], let list = sequence(value, in: "`includes`") { includes = list }
        var characteristics: [Characteristic] = []
        if let value = map["characteristics"], let list = sequence(value, in: "`characteristics`") {
            characteristics = list.compactMap { decodeCharacteristic($0) }
        }
        guard let id, let uuid else { return nil }
        return (Service(id: id, uuid: uuid, isPrimary: isPrimary, characteristics: characteristics), includes)
    }

    // MARK: Characteristics

    private mutating func decodeCharacteristic(_ node: YAMLNode) -> Characteristic? {
        guard
            let map = fields(
                node, in: "characteristic", allowed: Self.characteristicKeys, required: ["id", "uuid", "properties"])
        else { return nil }
        let id = map["id"].flatMap { declareID($0, for: "characteristic") }
        let uuid = map["uuid"].flatMap { self.uuid($0, kind: .characteristic, for: "characteristic") }
        let properties = map["properties"].flatMap { decodeProperties($0) }
        var isValid = id != nil && uuid != nil && properties != nil
        let props = properties ?? []

        var permissions: AttributePermissions?
        if let value = map["permissions"] {
            permissions = decodePermissions(value)
            if let granted = permissions, properties != nil {
                if props.contains(.read) && !granted.allowsRead {
                    report(
                        value, "the `read` property needs a read permission (`readable` or `read-encryption-required`)")
                }
                if !props.isDisjoint(with: .anyWrite) && !granted.allowsWrite {
                    let names = props.intersection(.anyWrite).names.map { "`\($0)`" }.joined(separator: ", ")
                    report(
                        value,
                        "the \(names) property needs a write permission (`writeable` or `write-encryption-required`)")
                }
            }
            if permissions == nil { isValid = false }
        }

        var security = SecurityRequirements()
        if let value = map["encryption"] {
            if let decoded = decodeEncryption(value, properties: properties) {
                security = decoded
            } else {
                isValid = false
            }
        }

        var maximumLength = Characteristic.maximumValueLength
        if let value = map["max-length"] {
            if let length = integer(value, for: "`max-length`", in: 0...Int64.max) {
                if length > Int64(Characteristic.maximumValueLength) {
                    report(
                        value,
                        "`max-length` \(length) is over \(Characteristic.maximumValueLength), the largest attribute value"
                    )
                    isValid = false
                } else {
                    maximumLength = Int(length)
                }
            } else {
                isValid = false
            }
        }

        var descriptors: [Descriptor] = []
        if let value = map["descriptors"], let list = sequence(value, in: "`descriptors`") {
            for item in list {
                if let descriptor = decodeDescriptor(item) { descriptors.append(descriptor) } else { isValid = false }
            }
        }

        // The value: `value` (cached), `initial` (dynamic) or the values of `fields` (dynamic).
        var layout: ValueLayout?
        var fieldBytes: [UInt8]?
        if let value = map["fields"] {
            if let (decodedLayout, bytes) = decodeFields(value) {
                layout = decodedLayout
                fieldBytes = bytes
            } else {
                isValid = false
            }
        }
        var characteristicValue = CharacteristicValue.dynamic([])
        let constant = map["value"], initial = map["initial"]
        if constant != nil, let initial {
            report(initial, "give either `value` (constant, cached) or `initial` (dynamic), not both")
            isValid = false
        } else if let given = constant ?? initial, fieldBytes != nil, let fieldsNode = map.keyNode("fields") {
            report(
                given,
                "the value is given twice: by `\(constant != nil ? "value" : "initial")` and by the values of `fields` "
                    + "at \(fieldsNode.mark.line):\(fieldsNode.mark.column)"
            )
            isValid = false
        }
        if let constant, initial == nil {
            // Core Bluetooth caches a characteristic created with a value and makes it read-only
            // (Core Bluetooth Programming Guide, "Creating Your Services and Characteristics").
            let changing = props.intersection(CharacteristicProperties.anyWrite.union(.anyUpdate))
            if !changing.isEmpty {
                let names = changing.names.map { "`\($0)`" }.joined(separator: ", ")
                report(
                    constant,
                    "a constant `value` is cached and read-only, but the characteristic has \(names); "
                        + "use `initial` for a dynamic value"
                )
                isValid = false
            }
            if let bytes = valueBytes(constant, for: "`value`") {
                characteristicValue = .cached(bytes)
            } else {
                isValid = false
            }
        } else if let initial, constant == nil {
            if let bytes = valueBytes(initial, for: "`initial`") {
                if bytes.count <= Characteristic.maximumValueLength && bytes.count > maximumLength {
                    report(initial, "the initial value is \(bytes.count) bytes, over `max-length` \(maximumLength)")
                    isValid = false
                }
                characteristicValue = .dynamic(bytes)
            } else {
                isValid = false
            }
        } else if let fieldBytes, let fieldsNode = map["fields"] {
            if fieldBytes.count > Characteristic.maximumValueLength {
                report(
                    fieldsNode,
                    "the value of `fields` is \(fieldBytes.count) bytes, "
                        + "over the \(Characteristic.maximumValueLength)-byte maximum"
                )
                isValid = false
            } else if fieldBytes.count > maximumLength {
                report(
                    fieldsNode, "the value of `fields` is \(fieldBytes.count) bytes, over `max-length` \(maximumLength)"
                )
                isValid = false
            }
            characteristicValue = .dynamic(fieldBytes)
        }

        guard isValid, let id, let uuid, let properties, let propertiesNode = map["properties"] else { return nil }
        let characteristic = Characteristic(
            id: id, uuid: uuid, properties: properties, permissions: permissions, security: security,
            value: characteristicValue, maximumLength: maximumLength, descriptors: descriptors, layout: layout)
        var entry = Declared(characteristic: characteristic, propertiesMark: propertiesNode.mark)
        if maximumLength < Characteristic.maximumValueLength {
            entry.writeErrorSources.append("the `max-length` \(maximumLength) check")
        }
        declared[id] = entry
        declaredOrder.append(id)
        return characteristic
    }

    /// `properties: [read, notify]`, each a Core Bluetooth property in kebab-case.
    private mutating func decodeProperties(_ node: YAMLNode) -> CharacteristicProperties? {
        guard let items = sequence(node, in: "`properties`") else { return nil }
        var result: CharacteristicProperties = []
        var isValid = true
        let names = CharacteristicProperties.names.map(\.name)
        for item in items {
            guard let name = choice(item, for: "property", from: names),
                let property = CharacteristicProperties(name: name)
            else {
                isValid = false
                continue
            }
            result.insert(property)
        }
        return isValid ? result : nil
    }

    /// `permissions: [readable, write-encryption-required]`.
    mutating func decodePermissions(_ node: YAMLNode) -> AttributePermissions? {
        guard let items = sequence(node, in: "`permissions`") else { return nil }
        var result: AttributePermissions = []
        var isValid = true
        for item in items {
            guard let name = choice(item, for: "permission", from: AttributePermissions.names.map(\.name)),
                let permission = AttributePermissions(name: name)
            else {
                isValid = false
                continue
            }
            result.insert(permission)
        }
        return isValid ? result : nil
    }

    /// `encryption: {read: encrypted, notify: authenticated}`; an operation the characteristic does not allow
    /// is an error (a security flag on it would mean nothing to bluetoothd).
    private mutating func decodeEncryption(
        _ node: YAMLNode, properties: CharacteristicProperties?
    ) -> SecurityRequirements? {
        let operations = AttributeOperation.allCases.map(\.rawValue)
        guard let map = fields(node, in: "`encryption`", allowed: operations) else { return nil }
        var result = SecurityRequirements()
        var isValid = true
        for name in operations {
            guard let value = map[name], let operation = AttributeOperation(rawValue: name) else { continue }
            guard let levelName = choice(value, for: "encryption level", from: SecurityLevel.allCases.map(\.name)),
                let level = SecurityLevel(name: levelName)
            else {
                isValid = false
                continue
            }
            if let properties, level != .none, !Self.allows(operation, properties) {
                report(
                    map.keyNode(name) ?? value,
                    "encryption on `\(name)`, which the characteristic does not allow "
                        + "(no `\(Self.requiredProperty(operation))` property)"
                )
                isValid = false
            }
            result[operation] = level
        }
        return isValid ? result : nil
    }

    static func allows(_ operation: AttributeOperation, _ properties: CharacteristicProperties) -> Bool {
        switch operation {
        case .read: properties.contains(.read)
        case .write: !properties.isDisjoint(with: .anyWrite)
        case .notify: properties.contains(.notify)
        case .indicate: properties.contains(.indicate)
        }
    }

    static func requiredProperty(_ operation: AttributeOperation) -> String { operation.rawValue }

    // MARK: Descriptors

    /// A descriptor: `user-description: text`, `presentation-format: {...}`, or `uuid` + `value` (+ `permissions`).
    private mutating func decodeDescriptor(_ node: YAMLNode) -> Descriptor? {
        let keys = ["user-description", "presentation-format", "uuid", "value", "permissions", "encryption"]
        guard let map = fields(node, in: "descriptor", allowed: keys) else { return nil }
        let shapes = ["user-description", "presentation-format", "uuid"].filter { map[$0] != nil }
        guard shapes.count == 1 else {
            report(node, "a descriptor has exactly one of `user-description`, `presentation-format` or `uuid`")
            return nil
        }
        if let text = map["user-description"] {
            guard let description = string(text, for: "`user-description`") else { return nil }
            return .userDescription(description)
        }
        if let format = map["presentation-format"] {
            return decodePresentationFormat(format).map { .presentationFormat($0) }
        }
        guard let uuidNode = map["uuid"], let uuid = uuid(uuidNode, kind: .descriptor, for: "descriptor") else {
            return nil
        }
        // bluetoothd creates the CCCD and Extended Properties descriptors itself (src/gatt-database.c).
        if uuid == .clientCharacteristicConfiguration || uuid == .characteristicExtendedProperties {
            report(uuidNode, "descriptor \(describe(uuid)) is created by bluetoothd; remove it")
            return nil
        }
        guard let valueNode = map["value"] else {
            report(node, "missing key `value` in descriptor")
            return nil
        }
        guard let value = valueBytes(valueNode, for: "descriptor `value`") else { return nil }
        var permissions: AttributePermissions = .readable
        if let node = map["permissions"] {
            guard let decoded = decodePermissions(node) else { return nil }
            permissions = decoded
        }
        var security = SecurityRequirements()
        if let node = map["encryption"],
            let encryption = fields(node, in: "descriptor `encryption`", allowed: ["read", "write"])
        {
            for name in ["read", "write"] {
                guard let value = encryption[name], let operation = AttributeOperation(rawValue: name) else { continue }
                guard let levelName = choice(value, for: "encryption level", from: SecurityLevel.allCases.map(\.name)),
                    let level = SecurityLevel(name: levelName)
                else { return nil }
                security[operation] = level
            }
        }
        return Descriptor(uuid: uuid, value: value, permissions: permissions, security: security)
    }

    /// The Presentation Format's format names (Assigned Numbers 2.4.1), for `format: sint16` instead of `0x0E`.
    static let formatNames: [(name: String, code: UInt8)] = [
        ("boolean", 0x01), ("uint8", 0x04), ("uint16", 0x06), ("uint24", 0x07), ("uint32", 0x08),
        ("sint8", 0x0C), ("sint16", 0x0E), ("sint24", 0x0F), ("sint32", 0x10), ("float32", 0x14),
        ("float64", 0x15), ("sfloat", 0x16), ("float", 0x17), ("utf8s", 0x19), ("struct", 0x1B),
    ]

    private mutating func decodePresentationFormat(_ node: YAMLNode) -> PresentationFormat? {
        let keys = ["format", "exponent", "unit", "namespace", "description"]
        guard let map = fields(node, in: "`presentation-format`", allowed: keys, required: ["format", "unit"]) else {
            return nil
        }
        var format: UInt8?
        if let value = map["format"] {
            if value.isPlainScalar, let text = value.scalar, let code = Self.integer(text) {
                if (0...0xFF).contains(code) {
                    format = UInt8(code)
                } else {
                    report(value, "format code \(text) is not a byte")
                }
            } else if let name = choice(value, for: "presentation format", from: Self.formatNames.map(\.name)) {
                format = Self.formatNames.first { $0.name == name }?.code
            }
        }
        let exponent = map["exponent"].map { integer($0, for: "`exponent`", in: -128...127) } ?? 0
        let unit = map["unit"].flatMap { integer($0, for: "`unit`", in: 0...0xFFFF) }
        let namespace = map["namespace"].map { integer($0, for: "`namespace`", in: 0...0xFF) } ?? 1
        let description = map["description"].map { integer($0, for: "`description`", in: 0...0xFFFF) } ?? 0
        guard let format, let exponent, let unit, let namespace, let description else { return nil }
        return PresentationFormat(
            format: format, exponent: Int8(exponent), unit: UInt16(unit), namespace: UInt8(namespace),
            description: UInt16(description))
    }
}
