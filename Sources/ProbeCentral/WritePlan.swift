import GATTModel
import GATTProfile

/// The writes `blemu verify --writes` makes, planned from the profile and what the probe saw before them.
///
/// For each characteristic the profile lets a central write and the device has, in the profile's order:
/// - `accepts`: a value the profile allows (its initial value, else one its write rule lets through), read back
///   where the characteristic reads and nothing else changes it;
/// - `refuses`: for each `validate` of its write rule, a value that passes the checks before it and fails it; the
///   rule stops at the first failure, so the device must answer with that check's error;
/// - `restores`: the value read before the writes, written back;
/// - on a link that is not paired, `guarded` first for a characteristic whose writes the profile guards: the value
///   read before, which the device must refuse for want of pairing. Its other writes wait for `--pair`.
///
/// Values are judged by `WriteCheck.admits`, as the engine judges them. A write the profile guards is made only on
/// a link paired as its security asks (`--pair` is Just Works: encrypted; with `--passkey`: authenticated):
/// bluetoothd's client answers Insufficient Encryption or Authentication by raising the link's security and trying
/// again (src/shared/att.c `change_security`, 5.66 to 5.87), so a value tried on a weaker link would test the
/// pairing, not the write rule. The one `guarded` write tests exactly that refusal, and a pairing it sets off is how
/// a refusal shows to this central.
enum WritePlan {
    /// The writes for `profile` against the device `report` saw, over a link of `security` (`.none` unpaired).
    ///
    /// With `exchanges`, a characteristic a protocol answers gets those exchanges instead, after every other write:
    /// a value the plan would make up means nothing to a control point, and could change the state the exchanges
    /// start from.
    static func writes(
        for profile: PeripheralProfile, seen report: ProbeReport, security: SecurityLevel,
        exchanges: ExchangePlan? = nil
    ) -> [ProbeWrite] {
        let changing = ProfileVerifier.Promises(profile, listened: 0).changing
        let match = ProfileMatch(profile, report)
        let conversed = exchanges == nil ? [] : Set(profile.behaviour.protocols.map(\.characteristicID))
        var writes: [ProbeWrite] = []
        for case (let declared, let seen?) in match.services.flatMap(\.characteristics)
        where !declared.properties.isDisjoint(with: [.write, .writeWithoutResponse])
            && !conversed.contains(declared.id)
        {
            let rule = profile.behaviour.writeRules.first { $0.characteristicID == declared.id }
            let target = Target(
                declared: declared, seen: seen, actions: rule?.actions ?? [],
                isChanging: changing.contains(declared.id))
            let fault = faultReason(declared, profile: profile)
            if security == .none, declared.effectiveSecurity[.write] != .none {
                writes.append(target.guardedWrite(skipping: fault))
            }
            writes += target.writes(skipping: securityReason(declared, security: security) ?? fault)
        }
        if let exchanges { writes += exchangeWrites(exchanges, profile: profile, match: match, security: security) }
        return writes
    }

    /// The exchanges as writes: each listens to every characteristic any exchange of its protocol expects a value
    /// on, and to the control point itself when it can send, so a value the profile does not declare is heard too.
    private static func exchangeWrites(
        _ plan: ExchangePlan, profile: PeripheralProfile, match: ProfileMatch, security: SecurityLevel
    ) -> [ProbeWrite] {
        let seen = Dictionary(
            match.services.flatMap(\.characteristics).compactMap { pair in pair.seen.map { (pair.declared.id, $0) } }
        ) { first, _ in first }
        let declared = Dictionary(profile.characteristics.map { ($0.id, $0) }) { first, _ in first }
        var listened: [String: [String]] = [:]
        for exchange in plan.exchanges {
            var ids = listened[exchange.characteristicID] ?? []
            let own = declared[exchange.characteristicID]?.properties ?? []
            let candidates =
                (own.isDisjoint(with: [.notify, .indicate]) ? [] : [exchange.characteristicID])
                + exchange.updates.map(\.characteristicID)
            for id in candidates where !ids.contains(id) { ids.append(id) }
            listened[exchange.characteristicID] = ids
        }
        func exchangeWrite(_ exchange: DeclaredExchange) -> ProbeWrite {
            let id = exchange.characteristicID
            var write = ProbeWrite(
                characteristic: id, path: seen[id]?.path ?? "",
                purpose: .exchange(answeredBy: exchange.answeredBy, error: exchange.rejection?.rawValue),
                bytes: exchange.request, withResponse: declared[id]?.properties.contains(.write) ?? true)
            write.reading = exchange.reading
            write.expects = exchange.updates.map {
                ProbeWrite.Update(
                    characteristic: $0.characteristicID, path: seen[$0.characteristicID]?.path ?? "", bytes: $0.value)
            }
            let paths = (listened[id] ?? []).compactMap { seen[$0]?.path }
            write.listens = paths
            write.waitMilliseconds = Int((exchange.waits / .milliseconds(1)).rounded(.up))
            guard let characteristic = declared[id] else { return write.notMade("not in the profile") }
            if seen[id] == nil { return write.notMade("the device has no such characteristic") }
            if let missing = write.expects?.first(where: { $0.path.isEmpty }) {
                return write.notMade("the device has no `\(missing.characteristic)`, where the answer goes")
            }
            if let reason = securityReason(characteristic, security: security)
                ?? faultReason(characteristic, profile: profile)
            {
                return write.notMade(reason)
            }
            // A refusal is the model's answer to nothing the device changes, so skipping it keeps them in step.
            if !write.withResponse && exchange.rejection != nil {
                return write.notMade("a Write Command gets no answer: only a Write Request can be refused")
            }
            return write
        }
        // Once an exchange the model accepts is not made, the device's state and the model's part: the protocol's
        // later exchanges are not made either.
        var parted: Set<String> = []
        var writes = plan.exchanges.map { exchange -> ProbeWrite in
            let write = exchangeWrite(exchange)
            if parted.contains(exchange.characteristicID) {
                return write.notMade("an earlier exchange on it was not made, so its state may not be the model's")
            }
            if case .notMade? = write.outcome, exchange.rejection == nil { parted.insert(exchange.characteristicID) }
            return write
        }
        for unreached in plan.unreached {
            writes.append(
                ProbeWrite(
                    characteristic: unreached.characteristicID,
                    path: seen[unreached.characteristicID]?.path ?? "",
                    purpose: .exchange(answeredBy: unreached.answeredBy, error: nil), bytes: [], withResponse: true,
                    skipped: "no run of at most \(ExchangePlan.searchDepth) requests reaches this case from the state "
                        + "the exchanges before left"))
        }
        return writes
    }

    /// Why no write to `characteristic` is made on a link of `security`, nil when it is paired as the profile asks.
    private static func securityReason(_ characteristic: Characteristic, security: SecurityLevel) -> String? {
        let needed = characteristic.effectiveSecurity[.write]
        if needed > security {
            let how =
                switch needed {
                case .none, .encrypted: "--pair"
                case .authenticated: "--pair --passkey N"
                case .secure: "a pairing with LE Secure Connections and a passkey, which --pair cannot promise"
                }
            return "writing needs a link that is \(needed.name), this one is "
                + (security == .none ? "not paired" : security.name) + " (\(how) pairs so): on a weaker link "
                + "bluetoothd would try to pair by itself"
        }
        return nil
    }

    /// Why no write to `characteristic` is made whatever the link: a fault of the profile would answer it.
    private static func faultReason(_ characteristic: Characteristic, profile: PeripheralProfile) -> String? {
        for fault in profile.behaviour.faults {
            if case .request(.write, let id, let nth) = fault.trigger, id == nil || id == characteristic.id {
                return "a fault answers the device's write number \(nth) itself, so the answers would not be "
                    + "its write rule's"
            }
        }
        return nil
    }

    /// One writable characteristic and what the profile says of its writes.
    private struct Target {
        var declared: Characteristic
        var seen: ProbeCharacteristic
        /// Its write rule's actions, in order (none: every write is stored).
        var actions: [WriteAction]
        /// Whether a schedule or another rule changes it, so a read after a write cannot be foretold.
        var isChanging: Bool

        /// The rule's checks, in order, with their errors.
        var checks: [(check: WriteCheck, error: ATTError)] {
            actions.compactMap { if case .validate(let check, let error) = $0 { (check, error) } else { nil } }
        }
        /// The value read before the writes, when there was one.
        var original: [UInt8]? { seen.read?.value.flatMap { Hex.bytes($0.hex) } }
        var withResponse: Bool { declared.properties.contains(.write) }
        var readsBack: Bool { declared.properties.contains(.read) && seen.canRead && !isChanging }

        /// The `guarded` write, on a link that is not paired: the value read before, as a Write Request, so a
        /// device that takes it is left as it was. Planned not made when `skipped`, when that value is unknown (any
        /// other could change the device), or when the characteristic takes only Write Commands, which a device
        /// cannot refuse to a central.
        func guardedWrite(skipping skipped: String?) -> ProbeWrite {
            let write = ProbeWrite(
                characteristic: declared.id, path: seen.path, purpose: .guarded, bytes: original ?? [],
                withResponse: true)
            if let skipped { return write.notMade(skipped) }
            guard withResponse else {
                return write.notMade("a Write Command gets no answer: only a Write Request can be refused")
            }
            guard original != nil else {
                return write.notMade(
                    (seen.canRead ? "its value before the writes could not be read" : "not readable")
                        + ": any value written could change the device, so no write is tried unpaired")
            }
            return write
        }

        /// Its writes: accepts, one refuses per check, then restores; all planned not made when `skipped`.
        func writes(skipping skipped: String?) -> [ProbeWrite] {
            func write(
                _ purpose: ProbeWrite.Purpose, _ bytes: [UInt8]?, readsBack: [UInt8]?, why: String?
            )
                -> ProbeWrite
            {
                ProbeWrite(
                    characteristic: declared.id, path: seen.path, purpose: purpose, bytes: bytes ?? [],
                    withResponse: withResponse, readsBack: readsBack, skipped: skipped ?? (bytes == nil ? why : nil))
            }
            let valid = validValue
            var writes = [
                write(
                    .accepts, valid, readsBack: valid.flatMap(heldAfterWriting),
                    why: "no value the profile declares passes its write rule")
            ]
            var names: [String] = []
            for (index, (check, error)) in checks.enumerated() {
                var name = Self.name(of: check)
                if names.contains(name) { name += "-\(index + 1)" }
                names.append(name)
                let purpose = ProbeWrite.Purpose.refuses(check: name, error: error.rawValue)
                guard withResponse else {
                    writes.append(
                        write(purpose, [], readsBack: nil, why: nil).notMade(
                            skipped ?? "a Write Command gets no answer: only a Write Request can be refused"))
                    continue
                }
                writes.append(
                    write(
                        purpose, invalidValue(failing: index, near: valid ?? original ?? []), readsBack: nil,
                        why: "no value of at most \(declared.maximumLength) bytes fails this check alone"))
            }
            let restore: ProbeWrite
            if let original {
                restore = write(.restores, original, readsBack: readsBack ? original : nil, why: nil)
            } else {
                let why =
                    seen.canRead
                    ? "its value before the writes could not be read, so it is not written back"
                    : "not readable: its value before the writes is unknown, so it is not written back"
                restore = write(.restores, [], readsBack: nil, why: nil).notMade(skipped ?? why)
            }
            return writes + [restore]
        }

        /// A value the profile allows, within the characteristic's length: the declared initial value, else the
        /// first that passes every check of the values each check names (an allowed value, a range's middle, the
        /// shortest length) and the one read before.
        var validValue: [UInt8]? {
            var candidates = [declared.value.bytes]
            for (check, _) in checks {
                switch check {
                case .allowedValues(let allowed): candidates += allowed
                case .length(let range): candidates.append(Self.resized(declared.value.bytes, to: range.lowerBound))
                case .range(let range):
                    candidates += [number((range.lowerBound + range.upperBound) / 2, into: declared.value.bytes)]
                        .compactMap { $0 }
                }
            }
            if let original { candidates.append(original) }
            return candidates.first { admitted($0, by: checks.count) }
        }

        /// Whether `value` fits and passes the first `count` checks.
        func admitted(_ value: [UInt8], by count: Int) -> Bool {
            value.count <= declared.maximumLength
                && checks.prefix(count).allSatisfy { $0.check.admits(value, to: declared) }
        }

        /// A value that passes every check before `index` and fails the one at `index`, built from `base`.
        func invalidValue(failing index: Int, near base: [UInt8]) -> [UInt8]? {
            let check = checks[index].check
            var candidates: [[UInt8]] = []
            switch check {
            case .allowedValues(let allowed):
                let start = allowed.contains(base) || allowed.isEmpty ? base : allowed[0]
                if let last = start.indices.last {
                    candidates = (1...255).map { step in
                        var value = start
                        value[last] = start[last] &+ UInt8(step)
                        return value
                    }
                } else {
                    candidates = [[0x00]]
                }
            case .length(let range):
                candidates = [range.upperBound + 1, range.lowerBound - 1].filter { $0 >= 0 }
                    .map { Self.resized(base, to: $0) }
            case .range(let range):
                candidates = [range.lowerBound - 1, range.upperBound + 1].compactMap { number($0, into: base) }
            }
            return candidates.first { admitted($0, by: index) && !check.admits($0, to: declared) }
        }

        /// `base` with its number (the first typed field, or the whole value as a little-endian unsigned integer)
        /// set to `value`; nil when the number's type cannot hold it.
        func number(_ value: Double, into base: [UInt8]) -> [UInt8]? {
            if let first = declared.layout?.fields.first, let count = first.type.byteCount {
                guard let bytes = try? ValueLayout.encode(.real(value.rounded()), as: first) else { return nil }
                return bytes + base.dropFirst(count)
            }
            let count = max(1, min(base.count, 8))
            guard value >= 0, value < Double(UInt64(1) << UInt64(min(count * 8, 63))) else { return nil }
            let whole = UInt64(value.rounded())
            return (0..<count).map { UInt8(truncatingIfNeeded: whole >> UInt64($0 * 8)) }
        }

        /// What a read returns after `written` is accepted, nil when it is not read back or cannot be foretold: the
        /// rule's last `store`, `echo` or `reply` to itself decides; with no rule every write is stored.
        func heldAfterWriting(_ written: [UInt8]) -> [UInt8]? {
            guard readsBack else { return nil }
            var held: [UInt8]? = actions.isEmpty ? written : original
            for action in actions {
                switch action {
                case .store, .echo: held = written
                case .reply(let id, let value) where id == declared.id: held = value
                case .set(let id, _, _) where id == declared.id: return nil
                case .validate, .reply, .set: break
                }
            }
            return held
        }

        /// The name a check goes by in a `refuses` purpose.
        static func name(of check: WriteCheck) -> String {
            switch check {
            case .allowedValues: "allowed"
            case .length: "length"
            case .range: "range"
            }
        }

        /// `bytes` cut or padded with zeros to `count` bytes.
        static func resized(_ bytes: [UInt8], to count: Int) -> [UInt8] {
            Array((bytes + [UInt8](repeating: 0, count: max(0, count - bytes.count))).prefix(count))
        }
    }
}

extension ProbeWrite {
    /// This write, planned as not made for `reason`.
    fileprivate func notMade(_ reason: String) -> ProbeWrite {
        var write = self
        write.outcome = .notMade(reason)
        return write
    }
}
