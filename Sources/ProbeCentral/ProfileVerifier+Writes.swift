import BlueZModel
import GATTModel
import GATTProfile

extension ProfileVerifier {
    /// The writes `blemu verify --writes` makes once the central has seen the device (`WritePlan`), for
    /// `BlueZCentral.probe(_:writing:)`, over a link of `security` (what the probe's pairing gives; `.none` unpaired).
    public static func writes(
        for profile: PeripheralProfile, security: SecurityLevel
    ) -> @Sendable (ProbeReport) -> [ProbeWrite] {
        { report in WritePlan.writes(for: profile, seen: report, security: security) }
    }

    /// The characteristics (the profile's ids) that a write changed and no restore put back, in the order written.
    public static func leftWritten(_ writes: [ProbeWrite]) -> [String] {
        var changed: [String] = []
        for write in writes where write.outcome == .accepted {
            if write.purpose == .restores {
                changed.removeAll { $0 == write.characteristic }
            } else if !changed.contains(write.characteristic) {
                changed.append(write.characteristic)
            }
        }
        return changed
    }

    /// One `write` check per write made or planned: subject the characteristic, check `accepts`,
    /// `refuses-CHECK` or `restored`.
    static func writes(_ profile: PeripheralProfile, _ writes: [ProbeWrite]) -> [Verification.Check] {
        let characteristics = Dictionary(profile.characteristics.map { ($0.id, $0) }) { first, _ in first }
        return writes.map { write in
            switch write.purpose {
            case .accepts: accepts(write)
            case .refuses(let check, let error): refuses(write, check, ATTError(rawValue: error), characteristics)
            case .restores: restored(write)
            }
        }
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
            let seen = described(failure)
            if failure.attError == error.rawValue {
                return check(.pass, "\(shown(hex: write.hex)) refused with \(seen)")
            }
            // A device on bluetoothd can only send what its D-Bus API carries: the rest arrives as Unlikely Error.
            let delivered = error.deliveredThroughBlueZ(on: .write)
            if delivered != error, failure.attError == delivered.rawValue {
                return check(
                    .pass,
                    "\(shown(hex: write.hex)) refused with \(seen), as a peripheral on bluetoothd delivers \(error) "
                        + "(src/gatt-database.c dbus_error_to_att_ecode: docs/bluez.md)")
            }
            return check(.fail, "\(shown(hex: write.hex)) refused with \(seen)")
        case .accepted?:
            let properties = characteristics[write.characteristic]?.properties ?? []
            if properties.isSuperset(of: [.write, .writeWithoutResponse]) {
                // docs/bluez.md, "Writes": bluetoothd acknowledges every write to such a characteristic itself.
                return check(
                    .skip,
                    "\(shown(hex: write.hex)) accepted: with both write and write-without-response, a peripheral on "
                        + "bluetoothd acknowledges a write before its application answers, so no refusal can reach "
                        + "a central (docs/bluez.md, \"Writes\")")
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

    /// An error as the central saw it: the ATT error when it can be told, else bluetoothd's D-Bus error.
    private static func described(_ failure: ProbeFailure) -> String {
        failure.attError.map { ATTError(rawValue: $0).description } ?? "\(failure.name) \"\(failure.message)\""
    }
}
