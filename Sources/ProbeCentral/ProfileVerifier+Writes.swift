import BlueZModel
import GATTModel
import GATTProfile

extension ProfileVerifier {
    /// The writes `blemu verify --writes` makes once the central has seen the device (`WritePlan`), for
    /// `BlueZCentral.probe(_:writing:)`, over a link of `security` (what the probe's pairing gives; `.none` unpaired).
    /// With `exchanges` (`ExchangePlanner.plan`), the protocols' characteristics get those instead of made-up values.
    public static func writes(
        for profile: PeripheralProfile, security: SecurityLevel, exchanges: ExchangePlan? = nil
    ) -> @Sendable (ProbeReport) -> [ProbeWrite] {
        { report in WritePlan.writes(for: profile, seen: report, security: security, exchanges: exchanges) }
    }

    /// The characteristics (the profile's ids) that a write changed and no restore put back, in the order written.
    public static func leftWritten(_ writes: [ProbeWrite]) -> [String] {
        var changed: [String] = []
        // A `guarded` write sends the value the device held, so even taken it changes nothing.
        // An exchange talks to a control point: what it changes is the device's state, which no write puts back.
        for write in writes where write.outcome == .accepted && write.purpose != .guarded && !write.isExchange {
            if write.purpose == .restores {
                changed.removeAll { $0 == write.characteristic }
            } else if !changed.contains(write.characteristic) {
                changed.append(write.characteristic)
            }
        }
        return changed
    }

    /// One check per write made or planned, subject the characteristic: `write` checks `accepts`, `refuses-CHECK`
    /// and `restored`, and the `security` check `write` of a `guarded` write.
    static func writes(_ profile: PeripheralProfile, _ writes: [ProbeWrite]) -> [Verification.Check] {
        let characteristics = Dictionary(profile.characteristics.map { ($0.id, $0) }) { first, _ in first }
        let scheduled = Set(profile.behaviour.schedules.map(\.characteristicID))
        return writes.map { write in
            switch write.purpose {
            case .accepts: accepts(write)
            case .refuses(let check, let error): refuses(write, check, ATTError(rawValue: error), characteristics)
            case .restores: restored(write)
            case .guarded: guarded(write)
            case .exchange(let answeredBy, let error):
                exchanged(
                    write, answeredBy, error.map { ATTError(rawValue: $0) }, scheduled: scheduled,
                    properties: characteristics[write.characteristic]?.properties ?? [])
            }
        }
    }

    /// Why a refusal cannot be checked on a characteristic with both write and write-without-response.
    private static let acknowledgedByBlueZ =
        "with both write and write-without-response, a peripheral on bluetoothd acknowledges a write before its "
        + "application answers, so no refusal can reach a central (docs/bluez.md, \"Writes\")"

    /// Whether `failure` is `error` as a central on bluetoothd receives it: "" when it is `error` itself, a note when
    /// it is the code bluetoothd delivers in its place; nil when it is neither.
    private static func refusal(_ failure: ProbeFailure, as error: ATTError) -> String? {
        if failure.attError == error.rawValue { return "" }
        // A device on bluetoothd can only send what its D-Bus API carries: the rest arrives as Unlikely Error.
        let delivered = error.deliveredThroughBlueZ(on: .write)
        guard delivered != error, failure.attError == delivered.rawValue else { return nil }
        return ", as a peripheral on bluetoothd delivers \(error) (src/gatt-database.c dbus_error_to_att_ecode: "
            + "docs/bluez.md)"
    }

    /// An exchange: the device must answer the request as the profile's case does (refused with its error, or
    /// accepted), then send exactly the values it declares, in order within each characteristic. On a
    /// characteristic a schedule also sends on, the declared values must arrive in order among the scheduled ones.
    private static func exchanged(
        _ write: ProbeWrite, _ answeredBy: String, _ error: ATTError?, scheduled: Set<String>,
        properties: CharacteristicProperties
    ) -> Verification.Check {
        let request = spaced(hex: write.hex)
        let expects = write.expects ?? []
        let expectedText =
            (error.map { "refused with \($0)" } ?? "accepted")
            + (expects.isEmpty ? "" : ", then " + described(expects)) + " (\(answeredBy))"
        let check = { (status: Verification.Check.Status, actual: String) in
            Verification.Check(
                .write, write.characteristic, "answers \(write.reading ?? request) (\(Self.caseName(answeredBy)))",
                status, expected: expectedText, actual: actual)
        }
        let heard = write.heard ?? []
        let heardText = heard.isEmpty ? "nothing sent" : "sent " + described(heard)
        // What a schedule sends meanwhile is neither declared by the case nor a defect.
        let unscheduled = heard.filter { !scheduled.contains($0.characteristic) }
        switch write.outcome {
        case .notMade(let why)?: return check(.skip, why)
        case nil: return check(.skip, "not made")
        case .refused(let failure)?:
            let seen = "\(request) refused with \(described(failure)); \(heardText)"
            guard let error, let note = refusal(failure, as: error), unscheduled.isEmpty else {
                return check(.fail, seen)
            }
            return check(.pass, seen + note)
        case .accepted?:
            let seen = "\(request) accepted; \(heardText)"
            if error != nil && properties.isSuperset(of: [.write, .writeWithoutResponse]) {
                return check(.skip, seen + ": " + acknowledgedByBlueZ)
            }
            guard error == nil else { return check(.fail, seen) }
            for characteristic in Set((expects + heard).map(\.characteristic)) {
                let wanted = expects.filter { $0.characteristic == characteristic }.map(\.hex)
                let got = heard.filter { $0.characteristic == characteristic }.map(\.hex)
                let holds = scheduled.contains(characteristic) ? got.containsInOrder(wanted) : wanted == got
                if !holds { return check(.fail, seen) }
            }
            return check(.pass, seen)
        }
    }

    /// `case 3` of `case 3: op is reset`; `otherwise` and `none` as they are.
    private static func caseName(_ answeredBy: String) -> String {
        answeredBy.split(separator: ":", maxSplits: 1).first.map(String.init) ?? answeredBy
    }

    /// `cp 80 00 01, status 08 C8 00`.
    private static func described(_ updates: [ProbeWrite.Update]) -> String {
        updates.map { "\($0.characteristic) \(spaced(hex: $0.hex))" }.joined(separator: ", ")
    }

    /// A protocol's bytes as its specification writes them, `80 05 01`; `empty` for none.
    private static func spaced(hex: String) -> String {
        hex.isEmpty ? "empty" : Hex.string(Hex.bytes(hex) ?? [], separator: " ")
    }

    private static func accepts(_ write: ProbeWrite) -> Verification.Check {
        let expected = "accepted" + (write.readsBack.map { ", then reads back \(shown(hex: $0))" } ?? "")
        let check = { (status: Verification.Check.Status, actual: String) in
            Verification.Check(.write, write.characteristic, "accepts", status, expected: expected, actual: actual)
        }
        switch write.outcome {
        case .accepted?:
            return readBack(of: write).map { check(.fail, "accepted \(shown(hex: write.hex)), then \($0)") }
                ?? check(.pass, "accepted \(shown(hex: write.hex))" + (write.readsBack == nil ? "" : ", read back"))
        case .refused(let failure)?:
            return check(.fail, "\(shown(hex: write.hex)) refused with \(described(failure))")
        case .notMade(let why)?: return check(.skip, why)
        case nil: return check(.skip, "not made")
        }
    }

    private static func refuses(
        _ write: ProbeWrite, _ name: String, _ error: ATTError, _ characteristics: [String: Characteristic]
    ) -> Verification.Check {
        let expected = "refused with \(error)"
        let check = { (status: Verification.Check.Status, actual: String) in
            Verification.Check(
                .write, write.characteristic, "refuses-\(name)", status, expected: expected, actual: actual)
        }
        switch write.outcome {
        case .refused(let failure)?:
            let seen = "\(shown(hex: write.hex)) refused with \(described(failure))"
            return refusal(failure, as: error).map { check(.pass, seen + $0) } ?? check(.fail, seen)
        case .accepted?:
            let properties = characteristics[write.characteristic]?.properties ?? []
            if properties.isSuperset(of: [.write, .writeWithoutResponse]) {
                return check(.skip, "\(shown(hex: write.hex)) accepted: " + Self.acknowledgedByBlueZ)
            }
            return check(.fail, "\(shown(hex: write.hex)) accepted")
        case .notMade(let why)?: return check(.skip, why)
        case nil: return check(.skip, "not made")
        }
    }

    private static func restored(_ write: ProbeWrite) -> Verification.Check {
        let check = { (status: Verification.Check.Status, actual: String) in
            Verification.Check(
                .write, write.characteristic, "restored", status, expected: "its value before the writes written back",
                actual: actual)
        }
        switch write.outcome {
        case .accepted?:
            return readBack(of: write).map { check(.fail, "\(shown(hex: write.hex)) written back, then \($0)") }
                ?? check(.pass, "\(shown(hex: write.hex)) written back" + (write.readsBack == nil ? "" : ", read back"))
        case .refused(let failure)?:
            return check(
                .fail, "not restored: writing back \(shown(hex: write.hex)) was refused with \(described(failure))")
        case .notMade(let why)?: return check(.skip, why)
        case nil: return check(.skip, "not made")
        }
    }

    /// A write the profile guards, made on an unpaired link: refused for want of pairing passes, taken while the
    /// link stayed unpaired fails. bluetoothd's client cannot show the refusal itself: it pairs and writes again
    /// (src/shared/att.c `change_security`), and reports a refusal pairing could not cure as `NotPermitted "Not
    /// paired"` (src/gatt-client.c `create_gatt_dbus_error`). So a link that became paired during the write was
    /// refused, and one paired before it cannot tell.
    private static func guarded(_ write: ProbeWrite) -> Verification.Check {
        let check = { (status: Verification.Check.Status, actual: String) in
            Verification.Check(
                .security, write.characteristic, "write", status, expected: "refused on an unpaired link",
                actual: actual)
        }
        let value = shown(hex: write.hex)
        switch (write.outcome, write.pairing) {
        case (.notMade(let why)?, _): return check(.skip, why)
        case (nil, _), (_, nil): return check(.skip, "not made")
        case (_, let pairing?) where pairing.before:
            return check(
                .skip,
                "the link was paired before this write (bluetoothd paired by itself for an earlier one, or the "
                    + "device was bonded), so whether it takes the write unpaired cannot be told")
        case (.accepted?, let pairing?):
            return pairing.after
                ? check(
                    .pass,
                    "\(value) refused for want of pairing: bluetoothd's client paired by itself and wrote it again")
                : check(.fail, "\(value) accepted on a link that was never paired: the write is open")
        case (.refused(let failure)?, _):
            let seen = described(failure)
            return refusedForPairing(failure)
                ? check(.pass, "\(value) refused on an unpaired link (\(seen))")
                : check(.skip, "\(value) refused with \(seen), which is not a refusal for want of pairing")
        }
    }

    /// What went wrong with the read after an accepted write, nil when it returned what it should (or none was
    /// asked for).
    private static func readBack(of write: ProbeWrite) -> String? {
        guard let expected = write.readsBack else { return nil }
        switch write.readBack {
        case .value(let value)?: return value.hex == expected ? nil : "reads back \(shown(hex: value.hex))"
        case .failure(let failure)?: return "the read back was refused with \(described(failure))"
        case nil: return "not read back (the link dropped first)"
        }
    }

    private static func shown(hex: String) -> String { shown(Hex.bytes(hex) ?? []) }
}
