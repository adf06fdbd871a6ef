import GATTModel

/// `behaviour.records` and the selections that read them (docs/profile-format.md, "Records").
extension ProfileDecoder {
    /// `records: {name: {characteristic, values: [{hex} | {text} | {fields: {...}}]}}`.
    mutating func decodeRecords(_ node: YAMLNode) -> [RecordStore] {
        guard case .mapping(let pairs) = node.kind else {
            report(node, "expected a mapping of record store names for `records`, found \(node.kindName)")
            return []
        }
        var stores: [RecordStore] = []
        for (key, value) in pairs {
            guard let name = string(key, for: "a record store's name") else { continue }
            guard !stores.contains(where: { $0.name == name }) else {
                report(key, "duplicate record store `\(name)`")
                continue
            }
            guard
                let map = fields(
                    value, in: "record store `\(name)`", allowed: ["characteristic", "values"],
                    required: ["characteristic", "values"]),
                let at = map["characteristic"],
                let target = lookUpCharacteristic(at, for: "record store `characteristic`"),
                let list = map["values"].flatMap({ sequence($0, in: "`values`") })
            else { continue }
            let characteristic = target.characteristic
            guard !characteristic.properties.isDisjoint(with: [.notify, .indicate]) else {
                report(
                    at,
                    "records are sent on their characteristic, and `\(characteristic.id)` neither notifies nor indicates"
                )
                continue
            }
            // Known from here on, even when a record below fails: a selection naming it is not a second error.
            recordStores[name] = characteristic
            var values: [[UInt8]] = []
            var isValid = true
            for item in list {
                guard let bytes = recordValue(item, of: characteristic) else {
                    isValid = false
                    continue
                }
                values.append(bytes)
            }
            guard isValid else { continue }
            stores.append(RecordStore(name: name, characteristicID: characteristic.id, initial: values))
        }
        return stores
    }

    /// One record: `{hex}`/`{text}` bytes, or `{fields: {name: value}}` over the characteristic's layout (fields not
    /// named keep the characteristic's own starting values).
    private mutating func recordValue(_ node: YAMLNode, of characteristic: Characteristic) -> [UInt8]? {
        guard let (form, body) = tagged(node, in: "a record", allowed: ["hex", "text", "fields"]) else { return nil }
        var bytes: [UInt8]
        if form == "fields" {
            guard let layout = characteristic.layout else {
                report(body, "`\(characteristic.id)` has no `fields` to name; give the record as `hex`")
                return nil
            }
            guard case .mapping(let pairs) = body.kind else {
                report(body, "expected a mapping of field names to values for `fields`, found \(body.kindName)")
                return nil
            }
            var values = layout.decode(characteristic.value.bytes) ?? []
            guard values.count == layout.fields.count else {
                report(body, "`\(characteristic.id)` has no starting value to build a record on; give every field")
                return nil
            }
            for (key, value) in pairs {
                guard let name = string(key, for: "a field name") else { return nil }
                guard let index = layout.index(of: name) else {
                    report(
                        key, "`\(characteristic.id)` has no field `\(name)`",
                        hint: EditDistance.hint(for: name, in: layout.fields.map(\.name)))
                    return nil
                }
                guard let decoded = fieldValue(value, as: layout.fields[index]) else { return nil }
                values[index] = decoded
            }
            do { bytes = try layout.encode(values) } catch {
                report(body, error.description)
                return nil
            }
        } else {
            guard let decoded = self.bytes(node, for: "a record") else { return nil }
            bytes = decoded
        }
        guard bytes.count <= characteristic.maximumLength else {
            report(
                node,
                "the record is \(bytes.count) bytes, over `max-length` \(characteristic.maximumLength) of `\(characteristic.id)`"
            )
            return nil
        }
        return bytes
    }

    /// `{records: name, field, min, max, first | last}`: which records an action or condition means.
    mutating func decodeSelection(_ node: YAMLNode, scope: Scope) -> RecordSelection? {
        guard
            let map = fields(
                node, in: "record selection", allowed: ["records", "field", "min", "max", "first", "last"],
                required: ["records"]),
            let storeNode = map["records"], let store = string(storeNode, for: "`records`")
        else { return nil }
        guard let characteristic = recordStores[store] else {
            reportUnknown(storeNode, "record store", store, among: Array(recordStores.keys), declaredIn: "records")
            return nil
        }
        var selection = RecordSelection(store: store)
        if let fieldNode = map["field"] {
            guard let name = string(fieldNode, for: "`field`") else { return nil }
            guard let spec = characteristic.layout?.fields.first(where: { $0.name == name }) else {
                report(
                    fieldNode, "`\(characteristic.id)` has no field `\(name)`",
                    hint: EditDistance.hint(for: name, in: characteristic.layout?.fields.map(\.name) ?? []))
                return nil
            }
            guard spec.type.isNumeric else {
                report(fieldNode, "records are selected by a number, and field `\(name)` is \(spec.type.name)")
                return nil
            }
            selection.field = name
            for bound in ["min", "max"] {
                guard let boundNode = map[bound] else { continue }
                guard let source = decodeSource(boundNode, as: spec, scope: scope) else { return nil }
                if bound == "min" { selection.min = source } else { selection.max = source }
            }
        } else if let bound = map.keyNode("min") ?? map.keyNode("max") {
            report(bound, "`min` and `max` bound a `field`: name it")
            return nil
        }
        let first = map["first"].flatMap { boolean($0, for: "`first`") } ?? false
        let last = map["last"].flatMap { boolean($0, for: "`last`") } ?? false
        if first && last, let at = map.keyNode("last") {
            report(at, "`first` or `last`, not both")
            return nil
        }
        selection.position = first ? .first : last ? .last : .all
        return selection
    }
}
