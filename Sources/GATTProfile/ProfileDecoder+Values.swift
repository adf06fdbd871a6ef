import GATTModel

/// Values: `{hex: ...}`, `{text: ...}`, and typed `fields`.
extension ProfileDecoder {
    /// A value's bytes, at most 512 (Core Spec Vol 3, Part F, 3.2.9; bluetoothd truncates longer values).
    mutating func valueBytes(_ node: YAMLNode, for what: String) -> [UInt8]? {
        guard let bytes = bytes(node, for: what) else { return nil }
        guard bytes.count <= Characteristic.maximumValueLength else {
            report(node, "\(what) is \(bytes.count) bytes, over the \(Characteristic.maximumValueLength)-byte maximum")
            return nil
        }
        return bytes
    }

    /// Bytes written as `{hex: "06 48"}` (or `"0x0648"`) or `{text: "UTF-8 text"}`.
    mutating func bytes(_ node: YAMLNode, for what: String) -> [UInt8]? {
        guard let (form, value) = tagged(node, in: what, allowed: ["hex", "text"]) else { return nil }
        guard let text = value.scalar, !(value.isNull && form == "hex") else {
            report(value, "expected text for `\(form)`, found \(value.kindName)")
            return nil
        }
        if form == "text" { return Array(text.utf8) }
        guard let bytes = Hex.bytes(text) else {
            report(
                value, "bad hex `\(EditDistance.echo(text))`: expected pairs of hex digits such as `06 48` or `0x0648`")
            return nil
        }
        return bytes
    }

    // MARK: Typed fields

    /// Every field type spelling: `u8` ... `hex`, then `flags8`, `flags16`, `flags32`.
    static let fieldTypeNames = FieldType.simpleNames.map(\.name) + FieldType.flagNames.map(\.name)

    /// Decodes `fields`: the layout, and the bytes of the field values when every field has one.
    mutating func decodeFields(_ node: YAMLNode) -> (ValueLayout, [UInt8]?)? {
        guard let items = sequence(node, in: "`fields`"), let fields = decodeFieldList(items) else { return nil }
        let layout = ValueLayout(fields.map(\.spec))
        let given = fields.compactMap(\.value)
        if given.isEmpty { return (layout, nil) }
        if given.count != fields.count {
            for field in fields where field.value == nil {
                report(node, "field `\(field.spec.name)` has no `value`; give every field a value, or none")
            }
            return nil
        }
        do {
            return (layout, try layout.encode(given))
        } catch {
            report(node, error.description)
            return nil
        }
    }

    /// A `fields` list, field by field: each one's name, type (with a flags field's `bits`) and `value` when it has
    /// one, checked against the fields before it (no name twice; only the last may vary in length). Every problem is
    /// reported before the list is refused. A characteristic's value (`decodeFields`) and a protocol's request
    /// (`decodeRequestFields`) are read by this one reader.
    mutating func decodeFieldList(_ items: [YAMLNode]) -> [(spec: FieldSpec, value: FieldValue?)]? {
        var decoded: [(spec: FieldSpec, value: FieldValue?)] = []
        var isValid = true
        for (index, item) in items.enumerated() {
            guard
                let map = fields(
                    item, in: "field", allowed: ["name", "type", "bits", "value"], required: ["name", "type"]),
                let name = map["name"].flatMap({ string($0, for: "field `name`") }),
                let typeNode = map["type"],
                let typeName = choice(typeNode, for: "field type", from: Self.fieldTypeNames)
            else {
                isValid = false
                continue
            }
            if decoded.contains(where: { $0.spec.name == name }), let nameNode = map["name"] {
                report(nameNode, "duplicate field `\(name)`")
                isValid = false
                continue
            }
            var type: FieldType
            if let flags = FieldType.flagNames.first(where: { $0.name == typeName }) {
                var bits: [FlagBit] = []
                if let bitsNode = map["bits"] {
                    guard let decodedBits = decodeBits(bitsNode, width: flags.bytes * 8) else {
                        isValid = false
                        continue
                    }
                    bits = decodedBits
                }
                type = .flags(bytes: flags.bytes, bits: bits)
            } else {
                type = FieldType.simpleNames.first { $0.name == typeName }?.type ?? .bytes
                if let bitsNode = map.keyNode("bits") {
                    report(bitsNode, "`bits` only applies to flags8, flags16 and flags32 fields")
                    isValid = false
                }
            }
            // Variable-length fields take the rest of the value, so only the last field may be one.
            if type.byteCount == nil && index != items.count - 1 {
                report(typeNode, "a `\(typeName)` field has no fixed length, so it must be the last field")
                isValid = false
            }
            let spec = FieldSpec(name: name, type: type)
            let value = map["value"].flatMap { fieldValue($0, as: spec) }
            // A value that fails is reported and refuses the list; the field still counts for the names after it.
            if map["value"] != nil && value == nil { isValid = false }
            decoded.append((spec, value))
        }
        return isValid ? decoded : nil
    }

    /// `bits: {sensor-contact-detected: 1, ...}`: names to bit positions within the field's width.
    private mutating func decodeBits(_ node: YAMLNode, width: Int) -> [FlagBit]? {
        guard case .mapping(let pairs) = node.kind else {
            report(node, "expected a mapping of bit names to positions for `bits`, found \(node.kindName)")
            return nil
        }
        var bits: [FlagBit] = []
        var isValid = true
        for (key, value) in pairs {
            guard let name = string(key, for: "a bit name"),
                let position = integer(value, for: "bit `\(key.scalar ?? "")`", in: 0...Int64(width - 1))
            else {
                isValid = false
                continue
            }
            if bits.contains(where: { $0.name == name || $0.bit == Int(position) }) {
                report(key, "bit `\(name)` repeats a name or position")
                isValid = false
                continue
            }
            bits.append(FlagBit(name: name, bit: Int(position)))
        }
        return isValid ? bits : nil
    }

    /// One field value in the spelling its type takes, checked to fit (reported with the model's `FieldError`).
    mutating func fieldValue(_ node: YAMLNode, as spec: FieldSpec) -> FieldValue? {
        let what = "field `\(spec.name)`"
        var value: FieldValue?
        switch spec.type {
        case .unsigned, .signed:
            value = number(node, for: what).map {
                $0 == $0.rounded() && abs($0) < 9e18 ? .integer(Int64($0)) : .real($0)
            }
        case .float32, .sfloat, .medfloat:
            value = number(node, for: what).map { .real($0) }
        case .boolean:
            value = boolean(node, for: what).map { .boolean($0) }
        case .flags:
            if case .sequence(let items) = node.kind {
                let names = items.compactMap { string($0, for: "a flag name") }
                value = names.count == items.count ? .flags(names) : nil
            } else if node.isPlainScalar, let text = node.scalar, let raw = Self.integer(text) {
                value = .integer(raw)
            } else {
                report(node, "expected a list of bit names or an integer for \(what), found \(node.kindName)")
            }
        case .utf8:
            value = string(node, for: what).map { .text($0) }
        case .bytes:
            if let text = string(node, for: what) {
                if let bytes = Hex.bytes(text) {
                    value = .bytes(bytes)
                } else {
                    report(
                        node,
                        "bad hex `\(EditDistance.echo(text))` for \(what): expected pairs of hex digits such as `06 48`"
                    )
                }
            }
        }
        guard let value else { return nil }
        do {
            _ = try ValueLayout.encode(value, as: spec)
        } catch {
            report(node, error.description)
            return nil
        }
        return value
    }
}
