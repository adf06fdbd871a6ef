import BlueZModel
import GATTModel
import GATTProfile

extension ProfileVerifier {
    /// One `security` check per readable characteristic whose reads the profile guards (refused on a link that was
    /// never paired, read once paired), and one per characteristic whose notifications or indications it guards
    /// (subscribing likewise), in the profile's order.
    ///
    /// A central on bluetoothd cannot see the refusal itself: its client answers Insufficient Encryption or
    /// Authentication by pairing and sending the request again (src/shared/att.c `change_security`), and reports a
    /// refusal that pairing could not cure as `NotPermitted "Not paired"` for all three errors (src/gatt-client.c
    /// `create_gatt_dbus_error`). So a value read while the link stayed unpaired through every read is open (a
    /// failure); a value read after bluetoothd paired by itself cannot be told from a guarded one (a skip: verify
    /// with --pair); a refusal for want of pairing passes.
    static func security(_ profile: PeripheralProfile, _ report: ProbeReport) -> [Verification.Check] {
        let match = ProfileMatch(profile, report)
        var checks: [Verification.Check] = []
        for case (let declared, let seen?) in match.services.flatMap(\.characteristics) {
            let security = declared.effectiveSecurity
            if declared.properties.contains(.read) && security[.read] != .none {
                let expected = "refused on an unpaired link, read on one paired \(security[.read].name)"
                let (status, actual) =
                    report.pairing.map { readCheck(seen.read, pairing: $0) }
                    ?? (.skip, "the report does not say whether the link was paired")
                checks.append(.init(.security, declared.id, "read", status, expected: expected, actual: actual))
            }
            if let level = subscriptionSecurity(declared) {
                let expected = "refused on an unpaired link, subscribed on one paired \(level.name)"
                let (status, actual) =
                    report.pairing.map { subscribeCheck(seen, pairing: $0) }
                    ?? (.skip, "the report does not say whether the link was paired")
                checks.append(.init(.security, declared.id, "subscribe", status, expected: expected, actual: actual))
            }
        }
        return checks
    }

    /// What subscribing to `characteristic` needs, nil when the profile leaves it open. BlueZ guards the CCCD's
    /// writes, not each kind of update (5.66 src/gatt-database.c `parse_chrc_flags`: `encrypt-notify` and
    /// `encrypt-indicate` both set the CCCD's write permission), so the stronger of the two is what a subscription
    /// needs. `notify-encryption-required` alone guards notify and makes the characteristic notify (Core Bluetooth's
    /// property; BlueZ's `encrypt-notify` sets the notify property too), so the property list is not consulted: the
    /// profile decoder already refuses a guard on an operation the characteristic does not allow.
    static func subscriptionSecurity(_ characteristic: Characteristic) -> SecurityLevel? {
        let security = characteristic.effectiveSecurity
        let level = max(security[.notify], security[.indicate])
        return level == .none ? nil : level
    }

    /// The status and what was seen, for a guarded subscription with `pairing`.
    private static func subscribeCheck(
        _ seen: ProbeCharacteristic, pairing: ProbePairing
    ) -> (Verification.Check.Status, String) {
        guard seen.canSubscribe else { return (.skip, "the device offers neither notify nor indicate") }
        let pairedBefore =
            "the link was paired before subscribing (bluetoothd paired by itself for an earlier request, or the "
            + "device was bonded)"
        if let failure = seen.subscribeError {
            let error = described(failure)
            guard refusedForPairing(failure) else {
                return (.skip, "refused with \(error), which is not a refusal for want of pairing")
            }
            if pairing.requested {
                return (
                    .fail, "refused on the link --pair paired (\(error)): the device asks more than that pairing gave"
                )
            }
            if seen.subscribePairing?.before == true {
                return (
                    .skip,
                    "refused with \(error), but \(pairedBefore), so whether it asks more than the profile cannot be "
                        + "told: verify with --pair"
                )
            }
            return (.pass, "refused on an unpaired link (\(error))")
        }
        if pairing.requested { return (.pass, "subscribed on the paired link") }
        guard let around = seen.subscribePairing else {
            return (.skip, "the report does not say whether the link was paired when it subscribed")
        }
        if around.before {
            return (.skip, "\(pairedBefore), so whether it allows an unpaired subscription cannot be told")
        }
        return around.after
            ? (.pass, "refused for want of pairing: bluetoothd's client paired by itself and subscribed again")
            : (.fail, "subscribed on a link that was never paired: its updates are open")
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
