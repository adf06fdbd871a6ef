import GATTModel
import GATTProfile

/// A profile's behaviour in words: what the device does on its own and when written. `blemu show` prints it, and the
/// control socket's `describe` answers it (`ProfileJSON.behaviour`), so a person or an agent next to a running device
/// reads the same sentences.
public struct BehaviourText: Sendable {
    /// The behaviour to describe.
    public let behaviour: Behaviour

    /// The text for `behaviour`.
    public init(behaviour: Behaviour) { self.behaviour = behaviour }

    /// One line per schedule, write rule and fault, a schedule's generators each on a line of its own indented by two
    /// spaces; empty when the profile declares none.
    public var sentences: [String] {
        var lines: [String] = []
        for schedule in behaviour.schedules where schedule.action == .transfer {
            lines.append(
                "transfer \(schedule.characteristicID): to each subscriber, cut to its maximum update length, "
                    + "as fast as the queue takes it, then EOM")
        }
        for schedule in behaviour.schedules where schedule.action != .transfer {
            let start = schedule.start == .launch ? "from launch" : "while subscribed"
            let pace =
                schedule.isRecordedPace ? "at the recorded times" : "every \(Self.duration(schedule.interval))"
            lines.append("schedule \(schedule.characteristicID): \(schedule.action.rawValue) \(pace), \(start)")
            for generator in schedule.generators {
                lines.append("  \(generator.field ?? "value"): \(Self.describe(generator.generator))")
            }
        }
        for rule in behaviour.writeRules {
            lines.append(
                "on write to \(rule.characteristicID): "
                    + rule.actions.map(Self.describe).joined(separator: ", then "))
        }
        for variable in behaviour.state {
            lines.append("state \(variable.name): \(variable.type.name), from \(variable.initial.displayText)")
        }
        for deviceProtocol in behaviour.protocols {
            lines += ProtocolText(deviceProtocol).sentences
        }
        for fault in behaviour.faults {
            lines.append("fault: \(Self.describe(fault.effect)) \(Self.describe(fault.trigger))")
        }
        return lines
    }

    /// `blemu show`'s section: "behaviour:" and the sentences under it; empty when the profile declares none.
    public var lines: [String] {
        guard !behaviour.isEmpty else { return [] }
        return ["  behaviour:"] + sentences.map { "    " + $0 }
    }

    static func describe(_ generator: Generator) -> String {
        switch generator {
        case .constant(let value): "constant \(value.displayText)"
        case .sequence(let values, let repeats):
            "sequence of \(values.count)" + (repeats ? ", repeating" : ", then holds the last")
        case .counter(let start, let step, let range, let wraps):
            "counter from \(number(start)) by \(number(step)) within \(number(range.lowerBound))...\(number(range.upperBound))"
                + (wraps ? ", wrapping" : ", stopping at the end")
        case .randomWalk(let start, let step, let range, let seed):
            "random walk from \(number(start)), steps of at most \(number(step)), within "
                + "\(number(range.lowerBound))...\(number(range.upperBound)) (seed \(seed))"
        case .sine(let period, let amplitude, let offset):
            "sine around \(number(offset)), amplitude \(number(amplitude)), period \(duration(period))"
        case .replay(let replay):
            "replay of \(replay.file)" + (replay.column.map { ", column \($0)" } ?? "")
                + (replay.format == .hex ? ", hex values" : "") + (replay.repeats ? ", repeating" : "")
        case .follow(let state, let rate, let start):
            "follows state \(state) at \(number(rate)) per second"
                + (start.map { ", from \(number($0))" } ?? "")
        }
    }

    static func describe(_ action: WriteAction) -> String {
        switch action {
        case .store: "store"
        case .echo: "echo to subscribers"
        case .validate(let check, let error):
            "refuse with \(error) unless "
                + {
                    switch check {
                    case .length(let range): "the length is \(range.lowerBound)...\(range.upperBound) bytes"
                    case .allowedValues(let values):
                        "it is one of " + values.map { Hex.string($0) }.joined(separator: " | ")
                    case .range(let range): "it is within \(number(range.lowerBound))...\(number(range.upperBound))"
                    }
                }()
        case .set(let id, let field, let rate):
            "set \(id)" + (field.map { ".\($0)" } ?? "") + (rate.map { " at \(number($0)) per second" } ?? "")
        case .reply(let id, let value): "notify \(id) with \(Hex.string(value))"
        }
    }

    static func describe(_ effect: Fault.Effect) -> String {
        switch effect {
        case .reject(let error): "reject with \(error)"
        case .delay(let duration): "delay the answer \(Self.duration(duration))"
        case .stopAdvertising: "stop advertising"
        case .disconnect: "disconnect"
        }
    }

    static func describe(_ trigger: Fault.Trigger) -> String {
        switch trigger {
        case .request(let operation, let id, let nth):
            "on the \(ordinal(nth)) \(operation)" + (id.map { " of \($0)" } ?? "")
        case .after(let duration): "after \(Self.duration(duration))"
        }
    }

    /// "1s", "250ms", "10min", "24h": the profile's own units.
    static func duration(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        for (unit, size) in [("h", Int64(3_600_000)), ("min", 60_000), ("s", 1000)] where milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func ordinal(_ n: Int) -> String {
        let suffix =
            (11...13).contains(n % 100) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th"
        return "\(n)\(suffix)"
    }
}
