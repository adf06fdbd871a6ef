import BlueZModel
import GATTModel
import GATTProfile

extension ProfileVerifier {
    /// One `security` check per readable characteristic whose reads the profile guards: refused on a link that was
    /// never paired, read once paired.
    ///
    /// A central on bluetoothd cannot see the refusal itself: its client answers Insufficient Encryption or
    /// Authentication by pairing and reading again (src/shared/att.c `change_security`), and reports a refusal
    /// that pairing could not cure as `NotPermitted "Not paired"` for all three errors (src/gatt-client.c
    /// `create_gatt_dbus_error`). So a value read while the link stayed unpaired through every read is open (a
    /// failure); a value read after bluetoothd paired by itself cannot be told from a guarded one (a skip: verify
    /// with --pair); a refusal for want of pairing passes.
    static func security(_ profile: PeripheralProfile, _ report: ProbeReport) -> [Verification.Check] {
        let match = ProfileMatch(profile, report)
        var checks: [Verification.Check] = []
        for case (let declared, let seen?) in match.services.flatMap(\.characteristics)
        where declared.properties.contains(.read) && declared.effectiveSecurity[.read] != .none {
            let level = declared.effectiveSecurity[.read]
            let expected = "refused on an unpaired link, read on one paired \(level.name)"
            let check = { (status: Verification.Check.Status, actual: String) in
                Verification.Check(.security, declared.id, "read", status, expected: expected, actual: actual)
            }
            guard let pairing = report.pairing else {
                checks.append(check(.skip, "the report does not say whether the link was paired"))
                continue
            }
            let (status, actual) = readCheck(seen.read, pairing: pairing)
            checks.append(check(status, actual))
        }
        return checks
    }

    /// The status and what was seen, for a guarded read with `pairing`.
    private static func readCheck(
        _ read: ProbeRead?, pairing: ProbePairing
    ) -> (Verification.Check.Status, String) {
        switch read {
        case nil:
            return (.skip, "not read (the link dropped first)")
        case .value?:
            if pairing.requested { return (.pass, "read on the paired link") }
            if pairing.before {
                return (
                    .skip, "read, but the device was bonded before the probe, so the link was encrypted from the start"
                )
            }
            if pairing.afterReads {
                return (
                    .skip,
                    "read after bluetoothd paired by itself (a read was refused for want of encryption, and its "
                        + "client pairs and reads again), so whether this value was open cannot be told: verify "
                        + "with --pair, or with only this read guarded"
                )
            }
            return (.fail, "read on a link that was never paired: the value is open")
        case .failure(let failure)?:
            let seen = described(failure)
            if Self.refusedForPairing(failure) {
                return pairing.requested
                    ? (
                        .fail,
                        "refused on the link --pair paired (\(seen)): the device asks more than that pairing gave"
                    )
                    : (.pass, "refused on an unpaired link (\(seen))")
            }
            return (.skip, "refused with \(seen), which is not a refusal for want of pairing")
        }
    }

    /// An error as the central saw it: the ATT error when it can be told, else bluetoothd's D-Bus error.
    static func described(_ failure: ProbeFailure) -> String {
        failure.attError.map { ATTError(rawValue: $0).description } ?? "\(failure.name) \"\(failure.message)\""
    }

    /// Whether bluetoothd's client reported a refusal that pairing (or more of it) would cure: Insufficient
    /// Authentication, Encryption or Encryption Key Size, which it reports alike.
    static func refusedForPairing(_ failure: ProbeFailure) -> Bool {
        if let code = failure.attError { return [0x05, 0x0C, 0x0F].contains(code) }
        return failure.name == BlueZName.Error.notPermitted && failure.message == "Not paired"
    }
}
