import BlueZModel
import GATTModel
import GATTProfile

/// What bluetoothd will make of a profile, said at the line that causes it: advertised service UUIDs the
/// advertisement cannot carry, a local name sent shortened, and ATT errors bluetoothd delivers as another code. The
/// decoder knows no stack (the profile is data); whoever serves or checks a profile for BlueZ adds these warnings
/// (`ProfileFile.load`, `blemu validate`, `blemu clone`).
public enum BlueZProfileCheck {
    /// The warnings for the profile whose parts `sites` records, in no particular order.
    public static func warnings(_ sites: ProfileSites) -> [Diagnostic] {
        advertisementWarnings(sites) + errorAnswerWarnings(sites)
    }

    /// `result` with the warnings among its diagnostics, in file order.
    public static func checked(_ result: ProfileResult) -> ProfileResult {
        result.adding(warnings(result.sites))
    }

    /// At its `service-uuids` entry, each service UUID the legacy advertisement cannot carry (a central filtering its
    /// scan on it never finds the device: bleak's `service_uuids`, Android's `ScanFilter`, iOS's
    /// `scanForPeripherals(withServices:)`), and at `local-name` when the name is advertised shortened
    /// (`AdvertisingPlanner`: Core Bluetooth's 28 + 10 byte rule).
    static func advertisementWarnings(_ sites: ProfileSites) -> [Diagnostic] {
        guard let advertisement = sites.advertisement, let plan = try? AdvertisingPlanner.plan(advertisement) else {
            return []
        }
        var warnings: [Diagnostic] = []
        for (index, step) in plan.uuidPlacements.enumerated() where !step.fits {
            guard let mark = sites.advertisedServices[step.uuid] else { continue }
            let before = plan.uuidPlacements[..<index].filter(\.fits).map { describe($0.uuid) }
            let takenBy = before.isEmpty ? "the other advertising data" : before.joined(separator: ", ")
            warnings.append(
                sites.warning(
                    at: mark,
                    "advertised service \(describe(step.uuid)) does not fit: it needs \(bytes(step.needed)) and "
                        + "\(step.left) of the \(plan.budget.serviceUUIDsLimit) for service UUIDs are left after "
                        + "\(takenBy); a central filtering its scan on it will not find the device",
                    hint:
                        "list it earlier in `service-uuids`, or advertise fewer or shorter UUIDs (`blemu adv` shows the bytes)"
                ))
        }
        if plan.isLocalNameShortened, let mark = sites.localName, let full = advertisement.localName,
            let short = plan.localName
        {
            let fix =
                switch (advertisement.mode, advertisement.scanResponse) {
                case (.extended, _): "a shorter `local-name`, or less manufacturer or service data, fits it whole"
                case (.legacy, .coreBluetooth): "`scan-response: full` would send it whole (up to 29 bytes)"
                case (.legacy, .full): "a shorter `local-name` fits whole"
                }
            warnings.append(
                sites.warning(
                    at: mark,
                    "local name \"\(full)\" is advertised shortened to \"\(short)\" (\(Array(short.utf8).count) of "
                        + "\(bytes(Array(full.utf8).count)))",
                    hint: fix))
        }
        return warnings
    }

    /// At each `error` the behaviour answers with that bluetoothd cannot carry: the central receives another code
    /// (`ATTError.deliveredThroughBlueZ`; BlueZ 5.66-5.82, src/gatt-database.c `dbus_error_to_att_ecode`).
    static func errorAnswerWarnings(_ sites: ProfileSites) -> [Diagnostic] {
        sites.errorAnswers.compactMap { answer in
            let error = answer.error
            guard
                let delivered = answer.operations.map({ error.deliveredThroughBlueZ(on: $0) })
                    .first(where: { $0 != error })
            else { return nil }
            return sites.warning(
                at: answer.mark,
                "bluetoothd cannot send \(error) to a central: it arrives as \(delivered) (BlueZ 5.66-5.82, "
                    + "src/gatt-database.c dbus_error_to_att_ecode)",
                hint:
                    "use an application error (0x80-0x9F), or one bluetoothd carries (docs/bluez.md: Errors an application can send)"
            )
        }
    }

    /// `180F (Battery)` for known SIG numbers, else the UUID: as the decoder names them.
    static func describe(_ uuid: BluetoothUUID) -> String {
        uuid.assignedName.map { "\(uuid) (\($0))" } ?? "\(uuid)"
    }

    /// "1 byte", "18 bytes".
    static func bytes(_ count: Int) -> String { count == 1 ? "1 byte" : "\(count) bytes" }
}
