import GATTModel
import GATTProfile

/// A protocol in words, one line per case: when this is written, that comes back (`blemu show`, `describe`).
struct ProtocolText {
    let deviceProtocol: DeviceProtocol

    init(_ deviceProtocol: DeviceProtocol) { self.deviceProtocol = deviceProtocol }

    /// "protocol on ID: op code u8 `op`", a line per op code, a line per case and one for what no case holds.
    var sentences: [String] {
        let request = deviceProtocol.request
        var lines = [
            "protocol on \(deviceProtocol.characteristicID): requests are a \(request.opCode.type.name) op code "
                + "`\(request.opCode.name)` and its parameters"
        ]
        for op in request.ops {
            let parameters = op.parameters.fields.map { field in
                "\(field.name) (\(field.type.name))" + (op.fixed[field.name].map { " = \($0.displayText)" } ?? "")
            }
            lines.append(
                "  op \(op.name) = \(Self.hex(op.code))"
                    + (parameters.isEmpty ? "" : ": " + parameters.joined(separator: ", ")))
        }
        for item in deviceProtocol.cases {
            let when =
                item.conditions.isEmpty ? "any request" : item.conditions.map(Self.describe).joined(separator: " and ")
            lines.append("  when \(when): " + item.actions.map(Self.describe).joined(separator: ", then "))
        }
        let otherwise =
            deviceProtocol.otherwise.map { $0.map(Self.describe).joined(separator: ", then ") }
            ?? "refuse with \(DeviceProtocol.defaultRejection)"
        lines.append("  otherwise: \(otherwise)")
        return lines
    }

    static func describe(_ condition: ProtocolCondition) -> String {
        switch condition {
        case .op(let names): names.count == 1 ? "op is \(names[0])" : "op is one of " + names.joined(separator: ", ")
        case .unknownOp: "op is unknown"
        case .malformed: "malformed"
        case .parameter(let name, let match), .state(let name, let match): "\(name) \(describe(match))"
        case .noRecords(let selection): "there is no record \(describe(selection))"
        }
    }

    static func describe(_ match: ValueMatch) -> String {
        switch match {
        case .oneOf(let values) where values.count == 1: "is \(values[0].displayText)"
        case .oneOf(let values): "is one of " + values.map(\.displayText).joined(separator: ", ")
        case .range(let range):
            "is within \(BehaviourText.number(range.lowerBound))...\(BehaviourText.number(range.upperBound))"
        }
    }

    static func describe(_ action: ProtocolAction) -> String {
        switch action {
        case .reject(let error): "refuse with \(error)"
        case .store: "store"
        case .setState(let name, let source): "set \(name) to \(describe(source))"
        case .send(let id, let kind, let pieces):
            "\(kind.rawValue) \(id) with "
                + pieces.map { "\($0.type.name) \(describe(piece: $0.source))" }.joined(separator: ", ")
        case .schedules(let control, let id): "\(control.rawValue) the schedules of \(id)"
        case .setField(let id, let field, let source): "set \(id)'s \(field) to \(describe(source))"
        case .sendRecords(let selection): "send each record \(describe(selection))"
        case .deleteRecords(let selection): "delete each record \(describe(selection))"
        case .wait(let duration): "wait \(BehaviourText.duration(duration))"
        }
    }

    /// A piece's value: a whole number in hex, as a protocol's bytes are read in its specification.
    static func describe(piece source: ValueSource) -> String {
        if case .literal(.integer(let number)) = source, number >= 0 { return hex(number) }
        return describe(source)
    }

    static func describe(_ source: ValueSource) -> String {
        switch source {
        case .literal(let value): value.displayText
        case .opCode: "the op code"
        case .parameter(let name): "the request's \(name)"
        case .state(let name): "state \(name)"
        case .count(let selection): "the count of records \(describe(selection))"
        }
    }

    /// "of readings", "of readings with sequence-number from the request's from", "(the last)".
    static func describe(_ selection: RecordSelection) -> String {
        var text = "of \(selection.store)"
        if let field = selection.field {
            switch (selection.min, selection.max) {
            case (let low?, let high?): text += " with \(field) within \(describe(low))...\(describe(high))"
            case (let low?, nil): text += " with \(field) at least \(describe(low))"
            case (nil, let high?): text += " with \(field) at most \(describe(high))"
            case (nil, nil): break
            }
        }
        switch selection.position {
        case .all: break
        case .first: text += " (the first)"
        case .last: text += " (the last)"
        }
        return text
    }

    static func hex(_ number: Int64) -> String {
        "0x" + (number < 16 ? "0" : "") + String(number, radix: 16, uppercase: true)
    }
}
