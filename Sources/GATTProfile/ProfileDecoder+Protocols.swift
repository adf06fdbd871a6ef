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

    /// Reports `name` as an unknown `what`, with the closest known name as a hint, else where to declare one.
    mutating func reportUnknown(
        _ node: YAMLNode, _ what: String, _ name: String, among known: [String], declaredIn section: String
    ) {
        report(
            node, "unknown \(what) `\(EditDistance.echo(name))`",
            hint: EditDistance.hint(for: name, in: known) ?? "declare it under `behaviour.\(section)`")
    }

    /// Why `name` means nothing in `scope`: a parameter of another op code, or no name at all.
    func unknownName(_ name: String, scope: Scope) -> String {
        if scope.parameters[name] == nil, let owners = scope.parameterOwners[name] {
            return "`\(name)` is a parameter of `\(owners.joined(separator: "`, `"))`: a case reads it when its `when` "
                + "names that one op code"
        }
        let parameters = scope.parameters.isEmpty ? "" : ", a parameter of the request"
        return "unknown name `\(EditDistance.echo(name))`: not the op code `\(scope.opCodeName)`\(parameters), nor a "
            + "state variable"
    }

    /// Every name a case in `scope` may use, for the closest-name hint.
    func knownNames(_ scope: Scope) -> [String] {
        [scope.opCodeName] + Array(scope.parameters.keys) + Array(stateVariables.keys)
    }

    /// A request's `fields`: each typed as a characteristic's field (`decodeFieldList`); one with a `value` is fixed,
    /// a request that holds another value there is not this op.
    mutating func decodeRequestFields(_ node: YAMLNode) -> (ValueLayout, [String: FieldValue])? {
        guard let items = sequence(node, in: "`fields`"), let fields = decodeFieldList(items) else { return nil }
        let fixed = fields.reduce(into: [String: FieldValue]()) { fixed, field in fixed[field.spec.name] = field.value }
        return (ValueLayout(fields.map(\.spec)), fixed)
    }
}
