import GATTModel

/// `behaviour.write-rules`: what a write must satisfy and what it sets off, checked against the declarations.
extension ProfileDecoder {
    mutating func decodeWriteRule(_ node: YAMLNode) -> WriteRule? {
        guard
            let map = fields(
                node, in: "write rule", allowed: ["characteristic", "actions"], required: ["characteristic", "actions"]),
            let at = map["characteristic"], let target = lookUpCharacteristic(at, for: "write rule `characteristic`"),
            let list = map["actions"].flatMap({ sequence($0, in: "`actions`") })
        else { return nil }
        let id = target.characteristic.id
        var isValid = true
        if target.characteristic.properties.isDisjoint(with: .anyWrite) {
            report(at, "characteristic `\(id)` cannot be written (no write property)")
            isValid = false
        }
        var actions: [WriteAction] = []
        for item in list {
            if let action = decodeWriteAction(item, on: target.characteristic) {
                actions.append(action)
                if case .validate = action { declared[id]?.writeErrorSources.append("the `validate` action") }
            } else {
                isValid = false
            }
        }
        return isValid ? WriteRule(characteristicID: id, actions: actions) : nil
    }

    private mutating func decodeWriteAction(_ node: YAMLNode, on written: Characteristic) -> WriteAction? {
        let names = ["store", "echo", "validate", "set", "reply"]
        if node.scalar != nil {
            guard let name = choice(node, for: "write action", from: names) else { return nil }
            switch name {
            case "store": return .store
            case "echo":
                guard !written.properties.isDisjoint(with: .anyUpdate) else {
                    report(
                        node, "`echo` notifies the written value, but `\(written.id)` neither notifies nor indicates")
                    return nil
                }
                return .echo
            default:
                report(node, "write action `\(name)` takes parameters: `\(name): {...}`")
                return nil
            }
        }
        guard let (name, body) = tagged(node, in: "write action", allowed: ["validate", "set", "reply"]) else {
            return nil
        }
        switch name {
        case "validate":
            guard
                let map = fields(
                    body, in: "`validate`", allowed: ["length", "allowed", "range", "error"],
                    required: ["error"])
            else { return nil }
            let error = map["error"].flatMap { attError($0, on: .write) }
            let checks = ["length", "allowed", "range"].filter { map[$0] != nil }
            guard checks.count == 1, let check = checks.first, let checkNode = map[check] else {
                report(body, "`validate` takes exactly one of `length`, `allowed` or `range`")
                return nil
            }
            var decoded: WriteCheck?
            switch check {
            case "length":
                if let (low, high) = bounds(checkNode, for: "`length`") {
                    let limit = Double(Characteristic.maximumValueLength)
                    if low >= 0, high <= limit, low == low.rounded(), high == high.rounded() {
                        decoded = .length(Int(low)...Int(high))
                    } else {
                        report(checkNode, "`length` bounds are whole numbers of bytes within 0...\(Int(limit))")
                    }
                }
            case "allowed":
                if let items = sequence(checkNode, in: "`allowed`") {
                    let values = items.compactMap { valueBytes($0, for: "allowed value") }
                    if values.count == items.count { decoded = .allowedValues(values) }
                }
            default:
                if let (low, high) = bounds(checkNode, for: "`range`") { decoded = .range(low...high) }
            }
            guard let decoded, let error else { return nil }
            return .validate(decoded, error: error)
        case "set":
            guard
                let map = fields(
                    body, in: "`set`", allowed: ["characteristic", "field", "rate-per-second"],
                    required: ["characteristic"]),
                let at = map["characteristic"], let target = lookUpCharacteristic(at, for: "`set` target")
            else { return nil }
            var field: String?
            if let fieldNode = map["field"] {
                guard let name = string(fieldNode, for: "`field`") else { return nil }
                guard let layout = target.characteristic.layout, layout.index(of: name) != nil else {
                    report(
                        fieldNode, "characteristic `\(target.characteristic.id)` has no field `\(name)`",
                        hint: EditDistance.hint(for: name, in: target.characteristic.layout?.fields.map(\.name) ?? []))
                    return nil
                }
                field = name
            }
            var rate: Double?
            if let rateNode = map["rate-per-second"] {
                guard let value = number(rateNode, for: "`rate-per-second`") else { return nil }
                guard value > 0 else {
                    report(rateNode, "`rate-per-second` must be above zero")
                    return nil
                }
                rate = value
            }
            return .set(characteristicID: target.characteristic.id, field: field, ratePerSecond: rate)
        default:  // reply
            guard
                let map = fields(
                    body, in: "`reply`", allowed: ["characteristic", "value"],
                    required: ["characteristic", "value"]),
                let at = map["characteristic"], let target = lookUpCharacteristic(at, for: "`reply` target"),
                let value = map["value"].flatMap({ valueBytes($0, for: "reply `value`") })
            else { return nil }
            guard !target.characteristic.properties.isDisjoint(with: .anyUpdate) else {
                report(at, "`reply` notifies, but `\(target.characteristic.id)` neither notifies nor indicates")
                return nil
            }
            return .reply(characteristicID: target.characteristic.id, value: value)
        }
    }

    /// `{min: 1, max: 4}`, with min at most max.
    private mutating func bounds(_ node: YAMLNode, for what: String) -> (Double, Double)? {
        guard let map = fields(node, in: what, allowed: ["min", "max"], required: ["min", "max"]),
            let low = map["min"].flatMap({ number($0, for: "`min`") }),
            let high = map["max"].flatMap({ number($0, for: "`max`") })
        else { return nil }
        guard low <= high else {
            report(node, "`min` \(low) is above `max` \(high)")
            return nil
        }
        return (low, high)
    }

    /// An ATT error by key (`value-not-allowed`) or code (`0x80`), answering `operation` (nil: either), recorded in
    /// `sites` so the serving stack can say whether it carries the error to a central.
    mutating func attError(_ node: YAMLNode, on operation: AttributeOperation?) -> ATTError? {
        guard let text = string(node, for: "`error`") else { return nil }
        guard let error = ATTError(name: text) else {
            report(
                node, "unknown ATT error `\(EditDistance.echo(text))`",
                hint: EditDistance.hint(for: text, in: ATTError.named.map(\.key))
                    ?? "use a name such as `value-not-allowed` or a code such as `0x80`")
            return nil
        }
        let operations: [AttributeOperation] = operation.map { [$0] } ?? [.read, .write]
        sites.errorAnswers.append(ProfileSites.ErrorAnswer(error: error, operations: operations, mark: node.mark))
        return error
    }
}
