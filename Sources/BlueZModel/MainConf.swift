/// bluetoothd's /etc/bluetooth/main.conf, as far as it changes what a central sees of an emulated peripheral.
///
/// An INI file (src/main.c reads it with GLib's key files): `[Section]` lines, `Key = Value` lines, `#` comments.
/// A key that is absent or commented out has bluetoothd's default, which can differ by version.
public struct MainConf: Sendable, Equatable {
    /// The values set, by section and key: `values["General"]?["DeviceID"]`.
    public let values: [String: [String: String]]

    /// The settings in `text`; lines that are neither a section nor a key are ignored, as GLib's parser would
    /// reject the file and bluetoothd would then use its defaults.
    public init(text: String) {
        var values: [String: [String: String]] = [:]
        var section = ""
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingSpaces()
            } else if let equals = line.firstIndex(of: "=") {
                let key = String(line[..<equals]).trimmingSpaces()
                values[section, default: [:]][key] = String(line[line.index(after: equals)...]).trimmingSpaces()
            }
        }
        self.values = values
    }

    /// The value of `key` in `section`, or nil when it is not set.
    public func value(_ section: String, _ key: String) -> String? { values[section]?[key] }

    /// What each setting that matters does here, one finding each (ids `main-conf-*`), for bluetoothd `bluez`
    /// (nil when unknown: the defaults of the newest behaviour are assumed).
    public func findings(bluez: String?, file: String = "/etc/bluetooth/main.conf") -> [HostFinding] {
        var findings: [HostFinding] = []
        // src/gatt-database.c populate_devinfo_service: a Device Information service with a PnP ID, unless false.
        if value("General", "DeviceID")?.lowercased() == "false" {
            findings.append(
                HostFinding("main-conf-device-id", .ok, "DeviceID = false: no Device Information of bluetoothd's"))
        } else {
            findings.append(
                HostFinding(
                    "main-conf-device-id", .warn,
                    "DeviceID is \(value("General", "DeviceID") ?? "not set"): bluetoothd publishes a Device Information "
                        + "service (180A, PnP ID) of its own, so a profile declaring 180A is seen with two",
                    fix: "set [General] DeviceID = false in \(file) and restart bluetooth"))
        }
        // src/adapter.c: Privacy device/network makes the adapter advertise a resolvable private address.
        let privacy = value("General", "Privacy")?.lowercased() ?? "off"
        findings.append(
            ["off", "false"].contains(privacy)
                ? HostFinding("main-conf-privacy", .ok, "Privacy = \(privacy): the adapter's own address is advertised")
                : HostFinding(
                    "main-conf-privacy", .warn,
                    "Privacy = \(privacy): the adapter advertises a resolvable private address that changes "
                        + "(RPATimeout), so a central that remembers addresses sees a new device",
                    fix: "set [General] Privacy = off for a fixed address a test can name"))
        // src/main.c: ControllerMode bredr turns LE off, and with it every advertisement.
        let mode = value("General", "ControllerMode")?.lowercased() ?? "dual"
        findings.append(
            mode == "bredr"
                ? HostFinding(
                    "main-conf-controller-mode", .fail, "ControllerMode = bredr: LE is off, nothing can advertise",
                    fix: "set [General] ControllerMode = dual (or le) in \(file) and restart bluetooth")
                : HostFinding("main-conf-controller-mode", .ok, "ControllerMode = \(mode): LE is on"))
        // src/device.c: JustWorksRepairing decides whether a bonded central may pair again without the user.
        let repairing = value("General", "JustWorksRepairing")?.lowercased() ?? "never"
        findings.append(
            repairing == "never"
                ? HostFinding(
                    "main-conf-just-works-repairing", .ok,
                    "JustWorksRepairing = never: a central that lost its bond cannot pair again by Just Works")
                : HostFinding(
                    "main-conf-just-works-repairing", .warn,
                    "JustWorksRepairing = \(repairing): a central that lost its bond pairs again "
                        + (repairing == "always" ? "silently" : "after a confirmation"),
                    fix: "set [General] JustWorksRepairing = never to behave as a phone does"))
        // [GATT] Cache: whether a bonded central's view of the database is kept between connections.
        let cache = value("GATT", "Cache")?.lowercased() ?? "always"
        findings.append(
            HostFinding(
                "main-conf-gatt-cache", .ok,
                "Cache = \(cache): "
                    + (cache == "no" ? "every connection discovers the database again" : "bonded centrals keep it")))
        // [GATT] Channels: 3 by default in 5.66 (EATT on), 1 from 5.67 (ab3ff0d2c); EATT may reorder notifications.
        let defaultChannels = bluez.map { KernelBlueZPair.isOlder($0, than: "5.67") } == true ? "3" : "1"
        let channels = value("GATT", "Channels") ?? defaultChannels
        findings.append(
            channels == "1"
                ? HostFinding("main-conf-gatt-channels", .ok, "Channels = 1: one ATT bearer, notifications in order")
                : HostFinding(
                    "main-conf-gatt-channels", .warn,
                    "Channels = \(channels)\(value("GATT", "Channels") == nil ? " (this bluetoothd's default)" : ""): "
                        + "EATT may deliver notifications out of order",
                    fix: "set [GATT] Channels = 1 in \(file) and restart bluetooth"))
        return findings
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    fileprivate func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
