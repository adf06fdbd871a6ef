import GATTModel
import GATTProfile

/// Works out the exchanges that exercise a profile's protocols (`blemu verify --writes`, docs/verify.md,
/// "Protocols"): for each case a concrete request it would take, then, from the state the profile starts in, the
/// shortest run of such requests that reaches each case in turn, with the profile's own engine (`Protocols`) run in
/// lockstep as the model of what must come back. No clock and no I/O.
///
/// A case that tests state (`control: false`) is reached by the requests that set that state first: the FTMS
/// trainer's "Control Not Permitted" after a Reset. A case no run of at most `ExchangePlan.searchDepth` requests reaches is
/// reported, not guessed at.
public enum ExchangePlanner {
    /// A bound on each protocol's exchanges, whatever its cases: the cases left past it are reported unreached.
    static let exchangeLimit = 64

    /// What a request can reach: a case by its index, or `otherwise` (or the default refusal).
    private enum Target: Hashable {
        case index(Int)
        case otherwise
    }

    /// The plan for every protocol of `profile`, one protocol after another, each from the state the ones before
    /// left. Throws `BehaviourError` as `Protocols(profile:)` does.
    public static func plan(for profile: PeripheralProfile) throws(BehaviourError) -> ExchangePlan {
        var model = try Protocols(profile: profile)
        var plan = ExchangePlan(exchanges: [], unreached: [])
        for deviceProtocol in profile.behaviour.protocols {
            let id = deviceProtocol.characteristicID
            let candidates = requests(for: deviceProtocol)
            let targets = deviceProtocol.cases.indices.map(Target.index) + [.otherwise]
            var reached: Set<Target> = []
            var count = 0
            while count < exchangeLimit,
                let path = search(
                    from: model, writing: id, candidates: candidates,
                    toward: targets.filter { !reached.contains($0) })
            {
                for request in path {
                    let outcome = model.write(request, to: id)
                    reached.insert(target(of: outcome))
                    plan.exchanges.append(exchange(request, to: id, outcome: outcome))
                    count += 1
                }
            }
            for target in targets where !reached.contains(target) {
                // An `otherwise` that is not declared is the default refusal: only a declared one is a case to reach.
                if target == .otherwise {
                    if deviceProtocol.otherwise != nil {
                        plan.unreached.append(.init(characteristicID: id, answeredBy: "otherwise"))
                    }
                    continue
                }
                guard case .index(let index) = target else { continue }
                plan.unreached.append(
                    .init(characteristicID: id, answeredBy: Protocols.label(of: deviceProtocol, case: index)))
            }
        }
        return plan
    }

    /// The shortest run of candidate requests, at most `ExchangePlan.searchDepth` long, whose last write reaches one of
    /// `goals` from `model`'s state, the goal first in `goals` among the shortest runs; nil when none does. Shortest
    /// first keeps what is cheap to reach before what takes state away: a glucose meter reports its records before
    /// the run that deletes them, to reach "no records found".
    private static func search(
        from model: Protocols, writing id: String, candidates: [[UInt8]], toward goals: [Target]
    ) -> [[UInt8]]? {
        guard !goals.isEmpty else { return nil }
        let rank = Dictionary(goals.enumerated().map { ($0.element, $0.offset) }) { first, _ in first }
        var frontier: [(model: Protocols, path: [[UInt8]])] = [(model, [])]
        for _ in 0..<ExchangePlan.searchDepth {
            var next: [(model: Protocols, path: [[UInt8]])] = []
            var best: (rank: Int, path: [[UInt8]])?
            for (state, path) in frontier {
                for request in candidates {
                    var copy = state
                    let outcome = copy.write(request, to: id)
                    if let found = rank[target(of: outcome)], found < (best?.rank ?? .max) {
                        best = (found, path + [request])
                    }
                    next.append((copy, path + [request]))
                }
            }
            if let best { return best.path }
            frontier = next
        }
        return nil
    }

    private static func target(of outcome: Protocols.Outcome) -> Target {
        outcome.caseIndex.map(Target.index) ?? .otherwise
    }

    /// The model's answer to one request as an exchange: the refusal, or the values the central receives.
    private static func exchange(_ request: [UInt8], to id: String, outcome: Protocols.Outcome) -> DeclaredExchange {
        var rejection: ATTError?
        var updates: [DeclaredExchange.Update] = []
        var waits = Duration.zero
        switch outcome.decision {
        case .reject(let error):
            rejection = error
        case .accept(let actions):
            for action in actions {
                switch action {
                case .notify(let target, let value), .indicate(let target, let value):
                    updates.append(.init(characteristicID: target, value: value))
                case .wait(let duration):
                    waits += duration
                case .update, .setField, .pauseSchedules, .resumeSchedules, .warning, .stopAdvertising, .disconnect:
                    break
                }
            }
        }
        return DeclaredExchange(
            characteristicID: id, request: request, reading: outcome.trace?.request ?? "",
            answeredBy: outcome.trace?.acted ?? "none", rejection: rejection, updates: updates, waits: waits)
    }

    /// One request per case, in the case's order, then one for `otherwise`: the first op code a case names with
    /// each parameter it tests at a value it admits, and each parameter it leaves open at a value no earlier case on
    /// that op admits (Set Target Power out of range, after the case for the range); a malformed request one byte
    /// short of its op code's parameters (or too short for an op code); an unknown op code the highest code the
    /// layout leaves free. Requests that read the same are kept once.
    static func requests(for deviceProtocol: DeviceProtocol) -> [[UInt8]] {
        let layout = deviceProtocol.request
        var requests: [[UInt8]] = []
        for (index, item) in deviceProtocol.cases.enumerated() {
            var names: [String]?
            var parameters: [String: FieldValue] = [:]
            var isMalformed = false
            var isUnknown = false
            for condition in item.conditions {
                switch condition {
                case .op(let ops): names = ops
                case .unknownOp: isUnknown = true
                case .malformed: isMalformed = true
                case .parameter(let name, let match): parameters[name] = admitted(by: match)
                case .state, .noRecords: break
                }
            }
            let earlier = deviceProtocol.cases[..<index]
            let request: [UInt8]? =
                if isMalformed { malformed(layout) } else if isUnknown { unknown(layout) } else {
                    (names ?? layout.ops.map(\.name)).lazy.compactMap { name in
                        layout.ops.first { $0.name == name }.flatMap { op in
                            encode(op, in: layout, parameters.merging(avoiding(earlier, op: op)) { given, _ in given })
                        }
                    }.first
                }
            if let request, !requests.contains(request) { requests.append(request) }
        }
        if let request = unknown(layout) ?? malformed(layout), !requests.contains(request) { requests.append(request) }
        return requests
    }

    /// For each parameter of `op` that earlier cases on it test, a value none of their tests admits, where one of a
    /// few tries (zero, just past each range or set) finds it.
    private static func avoiding(_ cases: ArraySlice<ProtocolCase>, op: RequestOp) -> [String: FieldValue] {
        var matches: [String: [ValueMatch]] = [:]
        for item in cases
        where item.conditions.contains(where: { condition in
            if case .op(let names) = condition { names.contains(op.name) } else { false }
        }) {
            for case .parameter(let name, let match) in item.conditions { matches[name, default: []].append(match) }
        }
        var values: [String: FieldValue] = [:]
        for field in op.parameters.fields {
            guard let tests = matches[field.name] else { continue }
            var tries: [Double] = [0]
            for test in tests {
                switch test {
                case .range(let range): tries += [range.lowerBound - 1, range.upperBound + 1]
                case .oneOf(let admitted): tries += admitted.compactMap(\.number).map { $0 + 1 }
                }
            }
            let fitted = tries.filter(\.isFinite).map {
                ValueComposer.fit(.real($0), to: field, keeping: ValueComposer.zero(of: field.type)).0
            }
            if let free = fitted.first(where: { value in !tests.contains { $0.admits(value) } }) {
                values[field.name] = free
            }
        }
        return values
    }

    /// A value `match` admits: its first value, or the range's lower bound (its upper when the lower is unbounded).
    private static func admitted(by match: ValueMatch) -> FieldValue {
        switch match {
        case .oneOf(let values): values.first ?? .integer(0)
        case .range(let range):
            .real(range.lowerBound.isFinite ? range.lowerBound : range.upperBound.isFinite ? range.upperBound : 0)
        }
    }

    /// `op` with `parameters` where given, each fixed field at its value, and zero elsewhere; nil when a value does
    /// not encode.
    private static func encode(
        _ op: RequestOp, in layout: RequestLayout, _ parameters: [String: FieldValue]
    )
        -> [UInt8]?
    {
        let values = op.parameters.fields.map { field in
            let wanted = op.fixed[field.name] ?? parameters[field.name] ?? ValueComposer.zero(of: field.type)
            return ValueComposer.fit(wanted, to: field, keeping: ValueComposer.zero(of: field.type)).0
        }
        guard let code = try? ValueLayout([layout.opCode]).encode([.integer(op.code)]),
            let rest = try? op.parameters.encode(values)
        else { return nil }
        return code + rest
    }

    /// The first op code with parameters, one byte short of them, that the layout reads as malformed (ops sharing a
    /// code may read it as another); else a value too short for an op code.
    private static func malformed(_ layout: RequestLayout) -> [UInt8]? {
        for op in layout.ops {
            guard let whole = encode(op, in: layout, [:]), let width = layout.opCode.type.byteCount,
                whole.count > width, layout.parse(Array(whole.dropLast())).isMalformed
            else { continue }
            return Array(whole.dropLast())
        }
        return (layout.opCode.type.byteCount ?? 0) > 1 ? [0] : []
    }

    /// The highest op code the layout's type holds that no op uses; nil when every code is taken.
    private static func unknown(_ layout: RequestLayout) -> [UInt8]? {
        guard let width = layout.opCode.type.byteCount, width <= 4 else { return nil }
        let used = Set(layout.ops.map(\.code))
        var code = (Int64(1) << (8 * Int64(width))) - 1
        while used.contains(code) && code > 0 { code -= 1 }
        guard !used.contains(code) else { return nil }
        return try? ValueLayout([layout.opCode]).encode([.integer(code)])
    }
}
