import GATTModel

/// The actions of `behaviour.protocols` cases (`then:`, `otherwise:`), each checked against the case's scope and
/// the written characteristic (docs/profile-format.md, "Protocols").
extension ProfileDecoder {
    /// `then:`/`otherwise:`, a list of actions; `reject` stands alone.
    mutating func decodeActions(
        _ node: YAMLNode, scope: Scope, written: Characteristic
    ) -> [ProtocolAction]? {
        guard let items = sequence(node, in: "actions") else { return nil }
        var actions: [ProtocolAction] = []
        var isValid = true
        for item in items {
            guard let action = decodeAction(item, scope: scope, written: written) else {
                isValid = false
                continue
            }
            if case .reject = action, items.count > 1 {
                report(
                    item,
                    "`reject` answers the write with an error, and a refused request does nothing else: it stands alone"
                )
                isValid = false
            }
            actions.append(action)
        }
        if items.isEmpty {
            report(node, "no actions: a request that does nothing still needs one (`store`, or an empty reply)")
            return nil
        }
        return isValid ? actions : nil
    }

    private mutating func decodeAction(
        _ node: YAMLNode, scope: Scope, written: Characteristic
    ) -> ProtocolAction? {
        if node.isPlainScalar, node.scalar == "store" { return .store }
        guard
            let (name, body) = tagged(
                node, in: "protocol action",
                allowed: [
                    "reject", "set", "set-field", "notify", "indicate", "update", "pause-schedules",
                    "resume-schedules", "send-records", "delete-records", "wait",
                ])
        else { return nil }
        switch name {
        case "reject":
            return attError(body, on: .write).map { .reject($0) }
        case "set":
            return decodeSetState(body, scope: scope)
        case "set-field":
            return decodeSetField(body, scope: scope)
        case "wait":
            guard let duration = duration(body, for: "`wait`") else { return nil }
            guard duration > .zero, duration <= .seconds(60) else {
                report(body, "`wait` must be above zero and at most 1min")
                return nil
            }
            return .wait(duration)
        case "send-records":
            return decodeSelection(body, scope: scope).map { .sendRecords($0) }
        case "delete-records":
            return decodeSelection(body, scope: scope).map { .deleteRecords($0) }
        case "pause-schedules", "resume-schedules":
            guard let target = lookUpCharacteristic(body, for: "`\(name)`") else { return nil }
            guard scheduledCharacteristics.contains(target.characteristic.id) else {
                report(
                    body,
                    "`\(target.characteristic.id)` has no schedule to \(name == "pause-schedules" ? "pause" : "resume")"
                )
                return nil
            }
            return .schedules(name == "pause-schedules" ? .pause : .resume, characteristicID: target.characteristic.id)
        default:
            let kind: Schedule.Action = name == "notify" ? .notify : name == "indicate" ? .indicate : .update
            return decodeSend(body, kind: kind, scope: scope, written: written)
        }
    }

    /// `set: {variable: source, ...}`, applied in the order written.
    private mutating func decodeSetState(_ node: YAMLNode, scope: Scope) -> ProtocolAction? {
        guard case .mapping(let pairs) = node.kind, pairs.count == 1, let (key, value) = pairs.first else {
            report(node, "`set` takes one `variable: value`; write one `set` per variable, in the order they apply")
            return nil
        }
        guard let name = string(key, for: "a state variable") else { return nil }
        guard let variable = stateVariables[name] else {
            reportUnknown(key, "state variable", name, among: Array(stateVariables.keys), declaredIn: "state")
            return nil
        }
        guard let source = decodeSource(value, as: FieldSpec(name: name, type: variable.type), scope: scope) else {
            return nil
        }
        return .setState(name, source)
    }

    /// `set-field: {characteristic, field, value}`: one field of a characteristic with a layout and a value that can
    /// change.
    private mutating func decodeSetField(_ node: YAMLNode, scope: Scope) -> ProtocolAction? {
        guard
            let map = fields(
                node, in: "`set-field`", allowed: ["characteristic", "field", "value"],
                required: ["characteristic", "field", "value"]),
            let at = map["characteristic"], let fieldNode = map["field"], let valueNode = map["value"],
            let target = lookUpCharacteristic(at, for: "`set-field` `characteristic`")?.characteristic,
            let fieldName = string(fieldNode, for: "`set-field` `field`")
        else { return nil }
        if refusesConstant(target, at: at) { return nil }
        guard let layout = target.layout else {
            report(at, "characteristic `\(target.id)` has no `fields`, so it has no field to set")
            return nil
        }
        guard let spec = layout.fields.first(where: { $0.name == fieldName }) else {
            report(
                fieldNode, "`\(target.id)` has no field `\(EditDistance.echo(fieldName))`",
                hint: EditDistance.hint(for: fieldName, in: layout.fields.map(\.name)))
            return nil
        }
        guard let source = decodeSource(valueNode, as: spec, scope: scope) else { return nil }
        return .setField(characteristicID: target.id, field: fieldName, source: source)
    }

    /// `notify: [pieces]` (this characteristic) or `notify: {characteristic, value: [pieces]}`.
    private mutating func decodeSend(
        _ node: YAMLNode, kind: Schedule.Action, scope: Scope, written: Characteristic
    ) -> ProtocolAction? {
        var target = written
        var piecesNode = node
        if case .mapping = node.kind {
            guard
                let map = fields(
                    node, in: "`\(kind.rawValue)`", allowed: ["characteristic", "value"], required: ["value"]),
                let valueNode = map["value"]
            else { return nil }
            if let at = map["characteristic"] {
                guard let declared = lookUpCharacteristic(at, for: "`\(kind.rawValue)` `characteristic`") else {
                    return nil
                }
                target = declared.characteristic
            }
            piecesNode = valueNode
        }
        let needed: CharacteristicProperties? =
            switch kind {
            case .notify: .notify
            case .indicate: .indicate
            default: nil
            }
        if let needed, !target.properties.contains(needed) {
            report(node, "characteristic `\(target.id)` cannot \(kind.rawValue) (no \(kind.rawValue) property)")
            return nil
        }
        if refusesConstant(target, at: node) { return nil }
        guard let items = sequence(piecesNode, in: "a value's pieces") else { return nil }
        var pieces: [ValuePiece] = []
        var length = 0
        for item in items {
            guard let (typeName, sourceNode) = tagged(item, in: "a value's piece", allowed: Self.fieldTypeNames),
                let type = FieldType.simpleNames.first(where: { $0.name == typeName })?.type
                    ?? FieldType.flagNames.first(where: { $0.name == typeName }).map({
                        .flags(bytes: $0.bytes, bits: [])
                    }),
                let source = decodeSource(sourceNode, as: FieldSpec(name: typeName, type: type), scope: scope)
            else { return nil }
            if type.byteCount == nil && item.mark != items.last?.mark {
                report(item, "a `\(typeName)` piece has no fixed length, so it must be the last piece")
                return nil
            }
            length += type.byteCount ?? 0
            pieces.append(ValuePiece(type: type, source: source))
        }
        if length > target.maximumLength {
            report(
                piecesNode,
                "the value is \(length) bytes, over `max-length` \(target.maximumLength) of `\(target.id)`")
            return nil
        }
        return .send(characteristicID: target.id, kind: kind, pieces: pieces)
    }

    /// A literal in `spec`'s spelling (checked to fit), or a name: the op code, a parameter in scope, a variable.
    mutating func decodeSource(_ node: YAMLNode, as spec: FieldSpec, scope: Scope) -> ValueSource? {
        if case .mapping = node.kind {
            guard let (_, body) = tagged(node, in: "a value", allowed: ["count"]) else { return nil }
            guard spec.type.isNumeric || spec.type.kind == .number else {
                report(node, "a count is a number; it cannot stand where a \(spec.type.name) goes")
                return nil
            }
            return decodeSelection(body, scope: scope).map { .count($0) }
        }
        guard node.isPlainScalar, let text = node.scalar, text.first.map({ $0.isLetter }) == true,
            !["true", "false", "True", "False", "TRUE", "FALSE"].contains(text)
        else {
            return fieldValue(node, as: spec).map { .literal($0) }
        }
        let sourceType: FieldType
        let source: ValueSource
        if text == scope.opCodeName {
            sourceType = .unsigned(bytes: 4)
            source = .opCode
        } else if let parameter = scope.parameters[text] {
            if stateVariables[text] != nil {
                report(
                    node, "`\(text)` is both a parameter of the request and a state variable",
                    hint: "rename the state variable")
                return nil
            }
            sourceType = parameter.type
            source = .parameter(text)
        } else if let variable = stateVariables[text] {
            sourceType = variable.type
            source = .state(text)
        } else if case .utf8 = spec.type {
            return .literal(.text(text))
        } else {
            report(node, unknownName(text, scope: scope), hint: EditDistance.hint(for: text, in: knownNames(scope)))
            return nil
        }
        guard sourceType.kind == spec.type.kind else {
            report(node, "`\(text)` is a \(sourceType.name); it cannot stand where a \(spec.type.name) goes")
            return nil
        }
        return source
    }
}

extension FieldType {
    /// What a value of this type is, for checking that a name can stand where a field goes.
    enum ValueKind { case number, boolean, text, bytes }

    /// This type's kind of value.
    var kind: ValueKind {
        switch self {
        case .boolean: .boolean
        case .utf8: .text
        case .bytes: .bytes
        default: .number
        }
    }
}
