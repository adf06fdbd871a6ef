/// Kernels and bluetoothd releases that do not work together, by version.
///
/// The one known today breaks every advertisement. bluetoothd 5.56 to 5.86 sends MGMT Add Extended Advertising Data
/// 8 bytes longer than its data (src/advertising.c `add_adv_params_callback` sized it with the 11-byte Add
/// Advertising header; BlueZ 5.87, 2a6968b40, fixed it). bluetoothd uses that command on every kernel that has it,
/// whatever the controller. The kernel change "Bluetooth: MGMT: validate Add Extended Advertising Data length"
/// (d3f7d17960ed, May 2026) refused any length but the exact one, so every RegisterAdvertisement failed (bluetoothd
/// logs Invalid Parameters, 0x0d, and answers org.bluez.Error.Failed); "MGMT: Fix backward compatibility with
/// userspace" (149324fc762c, June 2026) refuses only a short one again. Stable releases carried the first without
/// the second for a while; no Debian kernel package did (each took both in one upload).
public enum KernelBlueZPair {
    /// A stable series' releases with the exact-length check and without its relaxation.
    public struct Window: Sendable, Equatable {
        /// "6.12".
        public let series: String
        /// The releases in the window, by their third number.
        public let releases: ClosedRange<Int>
        /// The first release past it, the one to upgrade to.
        public let fixedIn: String
        /// Whether each release in it was seen failing, or only lies between a failing and a working one.
        public let isConfirmed: Bool
    }

    /// The windows known: 6.1.175 and 6.12.92-93 from the stable changelogs, 6.18.34 from Raspberry Pi OS reports
    /// (6.18.37 works; 6.18.35-36 are unconfirmed).
    public static let windows: [Window] = [
        Window(series: "6.1", releases: 175...175, fixedIn: "6.1.176", isConfirmed: true),
        Window(series: "6.12", releases: 92...93, fixedIn: "6.12.94", isConfirmed: true),
        Window(series: "6.18", releases: 34...34, fixedIn: "6.18.37", isConfirmed: true),
        Window(series: "6.18", releases: 35...36, fixedIn: "6.18.37", isConfirmed: false),
    ]

    /// The first bluetoothd that sends the exact length.
    public static let fixedBlueZ = "5.87"

    /// The upstream numbers of a kernel release: "6.12.93+rpt-rpi-v8" is [6, 12, 93].
    public static func numbers(of release: String) -> [Int] {
        let head = release.prefix { $0.isNumber || $0 == "." }
        return head.split(separator: ".").compactMap { Int($0) }
    }

    /// Whether `version` ("5.82") is older than `other` ("5.87"), number by number.
    public static func isOlder(_ version: String, than other: String) -> Bool {
        let left = numbers(of: version)
        let right = numbers(of: other)
        for (a, b) in zip(left, right) where a != b { return a < b }
        return left.count < right.count
    }

    /// The window `kernel` falls in, if any.
    public static func window(containing kernel: String) -> Window? {
        let parts = numbers(of: kernel)
        guard parts.count >= 3 else { return nil }
        return windows.first { "\(parts[0]).\(parts[1])" == $0.series && $0.releases.contains(parts[2]) }
    }

    /// What the pair does to advertising: fail when the kernel is in a window and bluetoothd older than 5.87, ok
    /// otherwise; warn when bluetoothd's version is unknown and the kernel is in a window.
    public static func finding(kernel: String, bluez: String?) -> HostFinding {
        let id = "kernel-bluez-pair"
        guard let window = window(containing: kernel) else {
            return HostFinding(
                id, .ok, "kernel \(kernel)\(bluez.map { " with bluetoothd \($0)" } ?? ""): no known bad pair")
        }
        let fix = "upgrade the kernel to \(window.fixedIn) or later, or bluetoothd to \(fixedBlueZ) or later"
        let why =
            "kernel \(kernel) refuses the 8 extra bytes bluetoothd before \(fixedBlueZ) sends with MGMT Add Extended "
            + "Advertising Data\(window.isConfirmed ? "" : " (likely: 6.18.34 fails and 6.18.37 works)")"
        guard let bluez else { return HostFinding(id, .warn, why + "; bluetoothd's version is unknown", fix: fix) }
        if !isOlder(bluez, than: fixedBlueZ) {
            return HostFinding(id, .ok, "kernel \(kernel) with bluetoothd \(bluez), which sends the exact length")
        }
        return HostFinding(
            id, window.isConfirmed ? .fail : .warn, why + ": every advertisement fails with Invalid Parameters (0x0d)",
            fix: fix)
    }

    /// bluetoothd releases with a known crash that a program on the same machine can set off, and when it is fixed.
    /// 5.87: a central whose discovery filter names UUIDs (bleak's `service_uuids`, `SetDiscoveryFilter`) makes
    /// src/adapter.c `is_filter_match` call `queue_find` with its function and data swapped, and bluetoothd dies of
    /// SIGSEGV at the first matching advertisement (github.com/bluez/bluez/issues/2282, fixed by 82af2beaf after 5.87;
    /// seen in the lab).
    public static func crashFinding(bluez: String?) -> HostFinding {
        let id = "bluetoothd-known-crash"
        guard let bluez else { return HostFinding(id, .skip, "bluetoothd's version is unknown") }
        guard bluez == "5.87" else { return HostFinding(id, .ok, "bluetoothd \(bluez): no known crash") }
        return HostFinding(
            id, .warn,
            "bluetoothd 5.87 crashes when a central on this machine filters discovery by service UUID (bleak's "
                + "service_uuids, SetDiscoveryFilter UUIDs), taking every peripheral it serves down with it",
            fix: "filter by UUID in the central's code instead, or run a bluetoothd with upstream fix 82af2beaf")
    }

    /// The cause of a failed RegisterAdvertisement, when the pair explains it: one sentence with both fixes, for
    /// `blemu run`'s error line. Nil when the kernel is in no window or bluetoothd sends the exact length.
    public static func explainAdvertisingFailure(kernel: String, bluez: String?) -> String? {
        guard window(containing: kernel) != nil, bluez.map({ isOlder($0, than: fixedBlueZ) }) ?? true else {
            return nil
        }
        let finding = finding(kernel: kernel, bluez: bluez)
        return finding.detail + (finding.fix.map { "; \($0)" } ?? "")
    }
}

/// The cause and fix of a registration bluetoothd refused, as `blemu doctor` would say them, for `blemu run`'s one
/// line.
public enum RegistrationDiagnosis {
    /// "; cause; fix" to append to the refusal, from the D-Bus error bluetoothd answered `operation` with, the
    /// kernel release and bluetoothd's version (nil when unknown).
    public static func explain(
        operation: String, errorName: String, kernel: String, bluez: String?, adapter: String
    ) -> String {
        if operation == "RegisterAdvertisement" {
            // src/advertising.c register_advertisement: "Maximum advertisements reached" once every instance is
            // registered.
            if errorName == "org.bluez.Error.NotPermitted" {
                return "; every advertising instance of \(adapter) is taken by another program: stop the other "
                    + "advertisers (another blemu run, bluetoothctl's advertise on)"
            }
            if errorName == "org.bluez.Error.Failed",
                let pair = KernelBlueZPair.explainAdvertisingFailure(kernel: kernel, bluez: bluez)
            {
                return "; " + pair
            }
        }
        return "; run `blemu doctor --adapter \(adapter)` to see what is wrong with this host"
    }
}
