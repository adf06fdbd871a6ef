import GATTModel

/// `behaviour.state` and `behaviour.protocols`: the device's own variables, and how it answers a control point
/// request by request, checked against the declarations (docs/profile-format.md, "Protocols").
extension ProfileDecoder {
    /// What a name in a case or an action means: the op code, one of the case's op's parameters, or a state
    /// variable.
    struct Scope {
        /// The op code field's name (`op`).
        var opCodeName: String
        /// The parameters in scope: those of the case's one op code; none when it names several or none.
        var parameters: [String: FieldSpec] = [:]
        /// Each parameter name of the layout with the op codes that have it, to say why one is out of scope.
        var parameterOwners: [String: [String]] = [:]

        /// The scope of a case under `request`, before its `when` names an op code.
        init(request: RequestLayout) {
            opCodeName = request.opCode.name
            for op in request.ops {
                for field in op.parameters.fields { parameterOwners[field.name, default: []].append(op.name) }
            }
        }
    }

    // MARK: State

    /// `state: {name: initial, name: {type, initial}}`: a bare `true`/`false` is a `bool`, a bare integer an `s32`,
    /// bare text a `utf8`.
    mutating func decodeState(_ node: YAMLNode) -> [StateVariable] {
        guard case .mapping(let pairs) = node.kind else {
            report(node, "expected a mapping of variable names to initial values for `state`, found \(node.kindName)")
            return []
        }
        var variables: [StateVariable] = []
        for (key, value) in pairs {
            guard let name = string(key, for: "a state variable's name") else { continue }
            guard !variables.contains(where: { $0.name == name }) else {
                report(key, "duplicate state variable `\(name)`")
                continue
            }
            guard let variable = decodeStateVariable(name, value) else { continue }
            variables.append(variable)
        }
        return variables
    }

    private mutating func decodeStateVariable(_ name: String, _ node: YAMLNode) -> StateVariable? {
        if case .mapping = node.kind {
            guard let map = fields(node, in: "state `\(name)`", allowed: ["type", "initial"], required: ["type"]),
                let typeNode = map["type"],
                let typeName = choice(typeNode, for: "state type", from: FieldType.simpleNames.map(\.name)),
                let type = FieldType.simpleNames.first(where: { $0.name == typeName })?.type
            else { return nil }
            let spec = FieldSpec(name: name, type: type)
            guard let initialNode = map["initial"] else {
                return StateVariable(name: name, type: type, initial: Self.zero(of: type))
            }
            return fieldValue(initialNode, as: spec).map { StateVariable(name: name, type: type, initial: $0) }
        }
        guard let text = node.scalar, !node.isNull else {
            report(node, "expected an initial value or `{type, initial}` for state `\(name)`, found \(node.kindName)")
            return nil
        }
        if node.isPlainScalar, ["true", "false"].contains(text) {
            return StateVariable(name: name, type: .boolean, initial: .boolean(text == "true"))
        }
        if node.isPlainScalar, Self.integer(text) != nil {
            let type = FieldType.signed(bytes: 4)
            guard let initial = fieldValue(node, as: FieldSpec(name: name, type: type)) else { return nil }
            return StateVariable(name: name, type: type, initial: initial)
        }
        return StateVariable(name: name, type: .utf8, initial: .text(text))
    }

    /// The value a variable declared without `initial` starts with.
    static func zero(of type: FieldType) -> FieldValue {
        switch type {
        case .boolean: .boolean(false)
        case .utf8: .text("")
        case .bytes: .bytes([])
        case .flags: .flags([])
        default: .integer(0)
        }
    }

    // MARK: Protocols

    /// One protocol: `{characteristic, request, cases, otherwise}`.
    mutating func decodeProtocol(_ node: YAMLNode, writeRuled: Set<String>) -> DeviceProtocol? {
        guard
            let map = fields(
                node, in: "protocol", allowed: ["characteristic", "request", "cases", "otherwise"],
                required: ["characteristic", "request", "cases"]),
            let at = map["characteristic"], let target = lookUpCharacteristic(at, for: "protocol `characteristic`"),
            let requestNode = map["request"], let caseList = map["cases"].flatMap({ sequence($0, in: "`cases`") })
        else { return nil }
        let written = target.characteristic
        var isValid = true
        if written.properties.isDisjoint(with: .anyWrite) {
            report(at, "characteristic `\(written.id)` cannot be written (no write property)")
            isValid = false
        }
        if writeRuled.contains(written.id) {
            report(at, "characteristic `\(written.id)` has a write rule too; a protocol answers all of its writes")
            isValid = false
        }
        guard let request = decodeRequest(requestNode) else { return nil }
        var cases: [ProtocolCase] = []
        var catchAll: Mark?
        for item in caseList {
            if let first = catchAll {
                report(
                    item,
                    "this case is never reached: the case at \(first.line):\(first.column) holds for every request",
                    hint: "put the case that holds for every request last, or use `otherwise`")
                isValid = false
            }
            guard let decoded = decodeCase(item, request: request, written: written) else {
                isValid = false
                continue
            }
            if decoded.conditions.isEmpty { catchAll = item.mark }
            cases.append(decoded)
        }
        var otherwise: [ProtocolAction]?
        if let otherwiseNode = map["otherwise"] {
            if let first = catchAll, let key = map.keyNode("otherwise") {
                report(
                    key,
                    "`otherwise` is never reached: the case at \(first.line):\(first.column) holds for every request")
                isValid = false
            }
            otherwise = decodeActions(otherwiseNode, scope: Scope(request: request), written: written)
            if otherwise == nil { isValid = false }
        }
        if cases.contains(where: { $0.actions.contains(where: Self.isRejection) })
            || otherwise.map({ $0.contains(where: Self.isRejection) }) ?? true
        {
            declared[written.id]?.writeErrorSources.append("the protocol's `reject`")
        }
        guard isValid else { return nil }
        return DeviceProtocol(characteristicID: written.id, request: request, cases: cases, otherwise: otherwise)
    }

    private static func isRejection(_ action: ProtocolAction) -> Bool {
        if case .reject = action { true } else { false }
    }

    /// `request: {op-code: u8 | {name, type}, ops: {name: code | {code, fields}}}`.
    private mutating func decodeRequest(_ node: YAMLNode) -> RequestLayout? {
        guard let map = fields(node, in: "`request`", allowed: ["op-code", "ops"], required: ["op-code", "ops"]),
            let opCodeNode = map["op-code"], let opsNode = map["ops"]
        else { return nil }
        let integerTypes = ["u8", "u16", "u24", "u32"]
        var opCode: FieldSpec?
        if case .mapping = opCodeNode.kind {
            if let spec = fields(opCodeNode, in: "`op-code`", allowed: ["name", "type"], required: ["type"]),
                let typeName = spec["type"].flatMap({ choice($0, for: "op code type", from: integerTypes) }),
                let type = FieldType.simpleNames.first(where: { $0.name == typeName })?.type
            {
                let name = spec["name"].flatMap { string($0, for: "op code `name`") } ?? "op"
                opCode = FieldSpec(name: name, type: type)
            }
        } else if let typeName = choice(opCodeNode, for: "op code type", from: integerTypes),
            let type = FieldType.simpleNames.first(where: { $0.name == typeName })?.type
        {
            opCode = FieldSpec(name: "op", type: type)
        }
        guard let opCode else { return nil }
        guard case .mapping(let pairs) = opsNode.kind, !pairs.isEmpty else {
            report(opsNode, "expected a mapping of op code names to codes for `ops`, found \(opsNode.kindName)")
            return nil
        }
        let maximum = Int64(1) << Int64(8 * (opCode.type.byteCount ?? 1)) - 1
        var ops: [RequestOp] = []
        var isValid = true
        for (key, value) in pairs {
            guard let name = string(key, for: "an op code's name") else {
                isValid = false
                continue
            }
            var code: Int64?
            var parameters = ValueLayout([])
            var fixed: [String: FieldValue] = [:]
            if case .mapping = value.kind {
                guard let op = fields(value, in: "op code `\(name)`", allowed: ["code", "fields"], required: ["code"])
                else {
                    isValid = false
                    continue
                }
                code = op["code"].flatMap { integer($0, for: "op code `\(name)`", in: 0...maximum) }
                if let fieldsNode = op["fields"] {
                    guard let (layout, values) = decodeRequestFields(fieldsNode) else {
                        isValid = false
                        continue
                    }
                    if let clash = layout.fields.first(where: { $0.name == opCode.name }) {
                        report(fieldsNode, "parameter `\(clash.name)` has the op code's name")
                        isValid = false
                    }
                    parameters = layout
                    fixed = values
                }
            } else {
                code = integer(value, for: "op code `\(name)`", in: 0...maximum)
            }
            guard let code else {
                isValid = false
                continue
            }
            if let other = ops.first(where: { $0.name == name }) {
                report(key, "op code `\(name)` is named twice; first with code \(other.code)")
                isValid = false
                continue
            }
            // One code may be several ops when what follows it tells them apart (RACP's operators): a length of its
            // own, or fixed fields. An op that reads every request an earlier one reads would never be chosen.
            let byteCount = parameters.fields.map { $0.type.byteCount ?? 0 }.reduce(0, +)
            if let other = ops.first(where: {
                $0.code == code && $0.fixed.isEmpty && fixed.isEmpty
                    && $0.parameters.fields.map({ $0.type.byteCount ?? 0 }).reduce(0, +) == byteCount
            }) {
                report(
                    key, "op code `\(name)` (\(code)) reads the same requests as `\(other.name)`",
                    hint: "give a parameter of one a fixed `value` (an operator), or a different length")
                isValid = false
                continue
            }
            ops.append(RequestOp(name: name, code: code, parameters: parameters, fixed: fixed))
        }
        return isValid ? RequestLayout(opCode: opCode, ops: ops) : nil
    }

    /// `{when: {...}, then: [...]}`; a case without `when` holds for every request.
    private mutating func decodeCase(
        _ node: YAMLNode, request: RequestLayout, written: Characteristic
    ) -> ProtocolCase? {
        guard let map = fields(node, in: "case", allowed: ["when", "then"], required: ["then"]),
            let thenNode = map["then"]
        else { return nil }
        var scope = Scope(request: request)
        var conditions: [ProtocolCondition] = []
        if let whenNode = map["when"] {
            guard let decoded = decodeConditions(whenNode, request: request, scope: &scope) else { return nil }
            conditions = decoded
        }
        guard let actions = decodeActions(thenNode, scope: scope, written: written) else { return nil }
        return ProtocolCase(conditions: conditions, actions: actions)
    }

    /// `when: {op: name | [names] | unknown, malformed: true, <parameter>: match, <state>: match}`.
    private mutating func decodeConditions(
        _ node: YAMLNode, request: RequestLayout, scope: inout Scope
    ) -> [ProtocolCondition]? {
        guard case .mapping(let pairs) = node.kind else {
            report(node, "expected a mapping of conditions for `when`, found \(node.kindName)")
            return nil
        }
        var conditions: [ProtocolCondition] = []
        var isValid = true
        // The op code first, whatever the key order: it decides which parameters the other keys may name.
        let ordered = pairs.sorted {
            ($0.0.scalar == scope.opCodeName ? 0 : 1) < ($1.0.scalar == scope.opCodeName ? 0 : 1)
        }
        var seen: Set<String> = []
        for (key, value) in ordered {
            guard let name = string(key, for: "a condition") else {
                isValid = false
                continue
            }
            guard seen.insert(name).inserted else {
                report(key, "duplicate condition `\(name)`")
                isValid = false
                continue
            }
            if name == scope.opCodeName {
                guard let condition = decodeOpCondition(value, request: request, scope: &scope) else {
                    isValid = false
                    continue
                }
                conditions.append(condition)
            } else if name == "no-records" {
                guard let selection = decodeSelection(value, scope: scope) else {
                    isValid = false
                    continue
                }
                conditions.append(.noRecords(selection))
            } else if name == "malformed" {
                guard let flag = boolean(value, for: "`malformed`") else {
                    isValid = false
                    continue
                }
                guard flag else {
                    report(value, "`malformed: false` is what every other case means; leave it out")
                    isValid = false
                    continue
                }
                conditions.append(.malformed)
            } else if let spec = scope.parameters[name] {
                if stateVariables[name] != nil {
                    report(
                        key, "`\(name)` is both a parameter of the request and a state variable",
                        hint: "rename the state variable")
                    isValid = false
                    continue
                }
                guard let match = decodeMatch(value, as: spec) else {
                    isValid = false
                    continue
                }
                conditions.append(.parameter(name, match))
            } else if let variable = stateVariables[name] {
                guard let match = decodeMatch(value, as: FieldSpec(name: name, type: variable.type)) else {
                    isValid = false
                    continue
                }
                conditions.append(.state(name, match))
            } else {
                report(
                    key, unknownName(name, scope: scope),
                    hint: EditDistance.hint(for: name, in: knownNames(scope) + ["malformed"]))
                isValid = false
            }
        }
        return isValid ? conditions : nil
    }

    private mutating func decodeOpCondition(
        _ node: YAMLNode, request: RequestLayout, scope: inout Scope
    ) -> ProtocolCondition? {
        let names = request.ops.map(\.name)
        if node.isPlainScalar, node.scalar == "unknown" {
            return .unknownOp
        }
        var items: [YAMLNode] = [node]
        if case .sequence(let list) = node.kind { items = list }
        var chosen: [String] = []
        for item in items {
            guard let name = choice(item, for: "op code", from: names + ["unknown"]) else { return nil }
            if name == "unknown" {
                report(item, "`unknown` stands alone: `\(scope.opCodeName): unknown`")
                return nil
            }
            chosen.append(name)
        }
        if chosen.count == 1, let op = request.ops.first(where: { $0.name == chosen[0] }) {
            scope.parameters = Dictionary(op.parameters.fields.map { ($0.name, $0) }) { first, _ in first }
        }
        return .op(chosen)
    }

    /// A value (`0x01`, `true`, `idle`), a list of values, or `{min, max}`.
    private mutating func decodeMatch(_ node: YAMLNode, as spec: FieldSpec) -> ValueMatch? {
        switch node.kind {
        case .mapping:
            guard spec.type.isNumeric else {
                report(node, "`\(spec.name)` is a \(spec.type.name), not a number: a range cannot hold it")
                return nil
            }
            guard let map = fields(node, in: "range of `\(spec.name)`", allowed: ["min", "max"]) else { return nil }
            guard map["min"] != nil || map["max"] != nil else {
                report(node, "a range needs `min`, `max` or both")
                return nil
            }
            let low = map["min"].map { number($0, for: "`min`") } ?? -Double.infinity
            let high = map["max"].map { number($0, for: "`max`") } ?? Double.infinity
            guard let low, let high else { return nil }
            guard low <= high else {
                report(node, "`min` \(low) is above `max` \(high)")
                return nil
            }
            return .range(low...high)
        case .sequence(let items):
            let values = items.compactMap { fieldValue($0, as: spec) }
            return values.count == items.count && !values.isEmpty ? .oneOf(values) : nil
        default:
            return fieldValue(node, as: spec).map { .oneOf([$0]) }
        }
    }

    // MARK: Actions

    /// `then:`/`otherwise:`, a list of actions; `reject` stands alone.
    private mutating func decodeActions(
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
    private mutating func decodeSource(_ node: YAMLNode, as spec: FieldSpec, scope: Scope) -> ValueSource? {
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

    /// Reports `name` as an unknown `what`, with the closest known name as a hint, else where to declare one.
    mutating func reportUnknown(
        _ node: YAMLNode, _ what: String, _ name: String, among known: [String], declaredIn section: String
    ) {
        report(
            node, "unknown \(what) `\(EditDistance.echo(name))`",
            hint: EditDistance.hint(for: name, in: known) ?? "declare it under `behaviour.\(section)`")
    }

    private func unknownName(_ name: String, scope: Scope) -> String {
        if scope.parameters[name] == nil, let owners = scope.parameterOwners[name] {
            return "`\(name)` is a parameter of `\(owners.joined(separator: "`, `"))`: a case reads it when its `when` "
                + "names that one op code"
        }
        let parameters = scope.parameters.isEmpty ? "" : ", a parameter of the request"
        return "unknown name `\(EditDistance.echo(name))`: not the op code `\(scope.opCodeName)`\(parameters), nor a "
            + "state variable"
    }

    private func knownNames(_ scope: Scope) -> [String] {
        [scope.opCodeName] + Array(scope.parameters.keys) + Array(stateVariables.keys)
    }
}

extension ProfileDecoder {
    /// A request's `fields`: each typed as a characteristic's field (`decodeFieldList`); one with a `value` is fixed,
    /// a request that holds another value there is not this op.
    mutating func decodeRequestFields(_ node: YAMLNode) -> (ValueLayout, [String: FieldValue])? {
        guard let items = sequence(node, in: "`fields`"), let fields = decodeFieldList(items) else { return nil }
        let fixed = fields.reduce(into: [String: FieldValue]()) { fixed, field in fixed[field.spec.name] = field.value }
        return (ValueLayout(fields.map(\.spec)), fixed)
    }

    // MARK: Records

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
