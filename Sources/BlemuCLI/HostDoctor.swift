import BlueZ
import BlueZModel
import DBus
import FoundationEssentials
import GATTModel
import Logging
import Peripheral

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu doctor`'s checks of the host in front of it: the bus, bluetoothd, the adapter, advertising, the bus
/// policy, main.conf, known bad kernel/BlueZ pairs, and a trial registration. Each check is a `HostFinding` with a
/// stable id (docs/bluez.md, "blemu doctor"); a check that depends on one that failed is skipped, said so.
struct HostDoctor {
    /// The bus bluetoothd is on.
    var bus: BusAddress
    /// The adapter blemu would serve on: "hci0".
    var adapter: String
    /// bluetoothd's configuration file; nil for the one the running bluetoothd was started with (`-f`), else
    /// /etc/bluetooth/main.conf.
    var mainConf: String? = nil
    /// Where the kernel lists radio switches (rfkill).
    var rfkill = "/sys/class/rfkill"
    /// Where the bus policies are, system's first (the later file wins in dbus-daemon's order).
    var policyFiles = ["/usr/share/dbus-1/system.d/bluetooth.conf", "/etc/dbus-1/system.d/bluetooth.conf"]
    /// Whether to register an application and an advertisement, then unregister them.
    var runsTrial = true
    /// Logs of the trial's backend.
    var logger: Logger

    /// What bluetoothd's object tree says of one adapter.
    private struct AdapterFacts {
        var adapter: [String: DBusValue]
        var advertising: [String: DBusValue]?
    }

    /// Every check, in the order a user would fix them.
    func run() async -> [HostFinding] {
        var findings: [HostFinding] = []
        let kernel = KernelRelease.current()
        let connection: BusConnection
        do { connection = try BusConnection(bus, logger: logger) } catch {
            findings.append(
                HostFinding(
                    "bus", .fail, "cannot connect to the \(bus) bus: \(error)",
                    fix: "start D-Bus (sudo systemctl start dbus), or name the bus with --bus"))
            return findings + skipped(after: "bus", kernel: kernel)
        }
        defer { connection.close() }
        findings.append(HostFinding("bus", .ok, "connected to the \(bus) bus"))

        guard let owner = try? await connection.nameOwner(BlueZName.service) else {
            findings.append(
                HostFinding(
                    "bluetoothd", .fail, "nobody owns org.bluez on the bus: bluetoothd is not running",
                    fix: "sudo systemctl start bluetooth (Debian: sudo apt-get install bluez)"))
            return findings + skipped(after: "bluetoothd", kernel: kernel)
        }
        let version = await BluetoothdVersion.of(bus: bus)
        // One process id for both /proc reads (bluetoothd's path and the main.conf it was started with).
        let pid = try? await connection.processID(of: owner)
        let path = pid.flatMap(Self.bluetoothdPath)
        let started = pid.flatMap(Self.configurationFile)
        let configuration = mainConf ?? started ?? Self.defaultMainConf
        findings.append(
            HostFinding(
                "bluetoothd", .ok,
                "bluetoothd \(version ?? "(version unknown)") owns org.bluez\(path.map { " (\($0))" } ?? "")"))
        findings.append(HostFinding("kernel", .ok, "kernel \(kernel)"))

        let objects: [ObjectPath: [String: [String: DBusValue]]]
        do { objects = try await Self.managedObjects(connection) } catch let error as DBusError {
            let denied = error.name == "org.freedesktop.DBus.Error.AccessDenied"
            findings.append(
                HostFinding(
                    "bus-policy", .fail, "org.bluez refused this user: \(error.name): \(error.message)",
                    fix: denied ? policyFix() : "see bluetoothd's journal: journalctl -u bluetooth"))
            return findings + skipped(after: "bus-policy", kernel: kernel, bluez: version, mainConf: configuration)
        } catch {
            findings.append(HostFinding("bus-policy", .fail, "cannot list bluetoothd's objects: \(error)"))
            return findings + skipped(after: "bus-policy", kernel: kernel, bluez: version, mainConf: configuration)
        }
        findings.append(policyFinding())

        let adapters = objects.filter { $0.value[BlueZName.Interface.adapter] != nil }.keys
            .map { String($0.rawValue.split(separator: "/").last ?? "") }.sorted()
        let adapterPath = try? ObjectPath(validating: "/org/bluez/\(adapter)")
        guard let interfaces = adapterPath.flatMap({ objects[$0] }),
            let properties = interfaces[BlueZName.Interface.adapter]
        else {
            findings.append(
                HostFinding(
                    "adapter", .fail,
                    adapters.isEmpty
                        ? "no Bluetooth adapter: bluetoothd lists none"
                        : "no \(adapter): the adapters here are \(adapters.joined(separator: ", "))",
                    fix: adapters.isEmpty
                        ? "plug in a controller, then check `rfkill list` and `dmesg | grep -i bluetooth`"
                        : "use --adapter \(adapters[0])"))
            findings += rfkillFindings()
            return findings + skipped(after: "adapter", kernel: kernel, bluez: version, mainConf: configuration)
        }
        let facts = AdapterFacts(adapter: properties, advertising: interfaces[BlueZName.Interface.advertisingManager])
        let address = (try? properties["Address"]?.asString()) ?? "?"
        let addressType = (try? properties["AddressType"]?.asString()) ?? "?"
        findings.append(HostFinding("adapter", .ok, "\(adapter) (\(address), \(addressType) address)"))
        findings += rfkillFindings()
        let blocked = findings.contains { $0.id == "rfkill" && $0.status == .fail }
        let powered = (try? properties[BlueZName.Property.powered]?.asBool()) ?? false
        findings.append(
            powered
                ? HostFinding("adapter-powered", .ok, "\(adapter) is powered")
                : HostFinding(
                    "adapter-powered", .fail, "\(adapter) is powered off",
                    fix: blocked
                        ? "unblock it first (rfkill unblock bluetooth), then: bluetoothctl power on"
                        : "bluetoothctl power on (or: btmgmt -i \(adapter) power on)"))
        findings += leFindings(facts)
        findings += mainConfFindings(bluez: version, file: configuration)
        findings.append(KernelBlueZPair.finding(kernel: kernel, bluez: version))
        findings.append(KernelBlueZPair.crashFinding(bluez: version))
        // A bad pair by version is what the trial confirms, so it does not keep the trial from running.
        let blocking = findings.contains { $0.status == .fail && $0.id != "kernel-bluez-pair" }
        if !runsTrial {
            findings.append(HostFinding("trial", .skip, "not run (--no-trial)"))
        } else if blocking {
            findings.append(HostFinding("trial", .skip, "not run: a check above failed"))
        } else {
            let trial = await trial(kernel: kernel, bluez: version)
            findings.append(trial)
            // A kernel in the window by its number that took the advertisement carries the relaxation (a
            // distribution's backport): the trial is the truth.
            if trial.status == .ok,
                let index = findings.firstIndex(where: { $0.id == "kernel-bluez-pair" && $0.status != .ok })
            {
                findings[index] = HostFinding(
                    "kernel-bluez-pair", .ok,
                    "kernel \(kernel) is in the MGMT advertising window by its number, yet the trial's advertisement "
                        + "was accepted: it carries the relaxation")
            }
        }
        return findings
    }

    /// The checks after `failed` that could not run, each skipped; main.conf and the kernel pair need no bus.
    private func skipped(
        after failed: String, kernel: String, bluez: String? = nil, mainConf file: String? = nil
    ) -> [HostFinding] {
        let order = [
            "bus", "bluetoothd", "bus-policy", "adapter", "adapter-powered", "le-peripheral",
            "advertising-instances", "extended-advertising", "trial",
        ]
        let later = order.drop { $0 != failed }.dropFirst()
        var findings = later.filter { $0 != "trial" }.map { HostFinding($0, .skip, "not checked: \(failed) failed") }
        if failed == "bus" || failed == "bluetoothd" {
            findings.insert(HostFinding("kernel", .ok, "kernel \(kernel)"), at: 0)
        }
        findings += mainConfFindings(bluez: bluez, file: file)
        findings.append(KernelBlueZPair.finding(kernel: kernel, bluez: bluez))
        findings.append(KernelBlueZPair.crashFinding(bluez: bluez))
        findings.append(HostFinding("trial", .skip, "not run: \(failed) failed"))
        return findings
    }

    /// LE, the peripheral role, advertising instances and extended advertising, from the adapter's interfaces.
    private func leFindings(_ facts: AdapterFacts) -> [HostFinding] {
        guard let advertising = facts.advertising else {
            return [
                HostFinding(
                    "le-peripheral", .fail, "\(adapter) has no LE advertising manager: no LE, or LE is turned off",
                    fix: "use an LE controller; check [General] ControllerMode in /etc/bluetooth/main.conf"),
                HostFinding("advertising-instances", .skip, "not checked: le-peripheral failed"),
                HostFinding("extended-advertising", .skip, "not checked: le-peripheral failed"),
            ]
        }
        var findings: [HostFinding] = []
        // Adapter1.Roles (5.61+): "central", "peripheral", "central-peripheral".
        if let roles = try? facts.adapter["Roles"]?.asStrings(), !roles.contains(where: { $0.contains("peripheral") }) {
            findings.append(
                HostFinding(
                    "le-peripheral", .fail,
                    "\(adapter) cannot take the peripheral role (Roles: \(roles.joined(separator: ", ")))",
                    fix: "use a controller that supports the LE peripheral role"))
        } else {
            findings.append(HostFinding("le-peripheral", .ok, "\(adapter) does LE and can be a peripheral"))
        }
        // SupportedInstances counts the free ones (src/advertising.c: max_ads - registered), ActiveInstances ours.
        let free = (try? advertising["SupportedInstances"]?.asByte()).map(Int.init)
        let active = (try? advertising["ActiveInstances"]?.asByte()).map(Int.init) ?? 0
        if let free, free == 0 {
            findings.append(
                HostFinding(
                    "advertising-instances", .fail,
                    "no advertising instance is free (\(active) registered by other programs)",
                    fix: "stop the other advertisers (another blemu run, bluetoothctl's advertise on, a phone-link app)"
                ))
        } else {
            findings.append(
                HostFinding(
                    "advertising-instances", .ok,
                    "\(free.map(String.init) ?? "some") advertising instances free, \(active) in use"))
        }
        let channels = (try? advertising["SupportedSecondaryChannels"]?.asStrings()) ?? []
        let capabilities = try? advertising["SupportedCapabilities"]?.asVardict()
        let maxLength = (try? capabilities?["MaxAdvLen"]?.asByte()).map { " up to \($0) bytes" } ?? ""
        findings.append(
            channels.isEmpty
                ? HostFinding(
                    "extended-advertising", .ok,
                    "legacy advertising only (31 bytes): a profile with `mode: extended` is refused here")
                : HostFinding(
                    "extended-advertising", .ok,
                    "extended advertising on \(channels.joined(separator: ", "))\(maxLength)"))
        return findings
    }

    /// The radio switches of this adapter (`/sys/class/rfkill/rfkillN/{name,soft,hard}`); none when the kernel
    /// lists none for it.
    private func rfkillFindings() -> [HostFinding] {
        let files = FileManager.default
        for entry in ((try? files.contentsOfDirectory(atPath: rfkill)) ?? []).sorted() {
            func read(_ name: String) -> String {
                ((try? String(contentsOfFile: "\(rfkill)/\(entry)/\(name)", encoding: .utf8)) ?? "")
                    .trimmingWhitespace()
            }
            guard read("name") == adapter else { continue }
            if read("hard") == "1" {
                return [
                    HostFinding(
                        "rfkill", .fail, "\(adapter) is hard-blocked (\(entry)): a switch, a key or the firmware",
                        fix: "turn the radio switch on (or the airplane-mode key), then check `rfkill list`")
                ]
            }
            if read("soft") == "1" {
                return [
                    HostFinding(
                        "rfkill", .fail, "\(adapter) is soft-blocked (\(entry))", fix: "rfkill unblock bluetooth")
                ]
            }
            return [HostFinding("rfkill", .ok, "\(adapter) is not blocked (\(entry))")]
        }
        return [HostFinding("rfkill", .ok, "no radio switch lists \(adapter)")]
    }

    /// Debian's main.conf, which bluetoothd reads unless started with `-f`.
    static let defaultMainConf = "/etc/bluetooth/main.conf"

    /// main.conf's settings that change what a central sees; the defaults when the file is missing.
    private func mainConfFindings(bluez: String?, file: String? = nil) -> [HostFinding] {
        let file = file ?? mainConf ?? Self.defaultMainConf
        let text = try? String(contentsOfFile: file, encoding: .utf8)
        let findings = MainConf(text: text ?? "").findings(bluez: bluez, file: file)
        guard text == nil else { return findings }
        return findings.map {
            HostFinding($0.id, $0.status, "\($0.detail) (no \(file): bluetoothd's defaults)", fix: $0.fix)
        }
    }

    /// The file the running bluetoothd was started with (`-f FILE` or `--configfile=FILE` in /proc/PID/cmdline),
    /// when this user may read its command line and it named one.
    static func configurationFile(pid: UInt32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
        let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        for (index, word) in words.enumerated() {
            if word == "-f" || word == "--configfile", index + 1 < words.count { return words[index + 1] }
            if word.hasPrefix("--configfile=") { return String(word.dropFirst("--configfile=".count)) }
        }
        return nil
    }

    /// Whether this user may talk to org.bluez: the call that just worked says yes; the policy says to whom.
    private func policyFinding() -> HostFinding {
        if getuid() == 0 { return HostFinding("bus-policy", .ok, "root may talk to org.bluez") }
        let policy = Self.policy(policyFiles)
        let user = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "uid \(getuid())"
        if policy.everyone {
            return HostFinding("bus-policy", .ok, "\(user) may talk to org.bluez (the policy allows every user)")
        }
        return HostFinding(
            "bus-policy", .ok,
            "\(user) may talk to org.bluez\(policy.groups.isEmpty ? "" : " (group \(policy.groups.joined(separator: ", ")))")"
        )
    }

    /// The one thing to do when the bus refused this user.
    private func policyFix() -> String {
        let groups = Self.policy(policyFiles).groups
        guard let group = groups.first else {
            return "run blemu as root, or add a <policy> allowing send_destination=\"org.bluez\" to "
                + "/etc/dbus-1/system.d/bluetooth.conf"
        }
        return
            "sudo usermod -aG \(group) $USER, then log in again (the bus policy lets group \(group) talk to org.bluez)"
    }

    /// Who the D-Bus policy files let send to org.bluez: groups by name, and whether the default context does.
    static func policy(_ paths: [String]) -> (groups: [String], everyone: Bool) {
        var groups: [String] = []
        var everyone = false
        for path in paths {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            // <policy group="bluetooth"> ... <allow send_destination="org.bluez"/> ... </policy>
            for block in text.components(separatedBy: "<policy").dropFirst() {
                let body = block.components(separatedBy: "</policy>").first ?? ""
                guard body.contains("allow send_destination=\"org.bluez\"") else { continue }
                let head = body.prefix { $0 != ">" }
                if head.contains("context=\"default\"") { everyone = true }
                if let range = head.firstRange(of: "group=\"") {
                    let name = head[range.upperBound...].prefix { $0 != "\"" }
                    if !groups.contains(String(name)) { groups.append(String(name)) }
                }
            }
        }
        return (groups, everyone)
    }

    /// Registers a one-characteristic application and an advertisement on the adapter, then unregisters both,
    /// saying exactly what bluetoothd answered; a refused advertisement on a known bad pair says so.
    private func trial(kernel: String, bluez: String?) async -> HostFinding {
        let service = Service(
            id: "doctor", uuid: BluetoothUUID(0x180F),
            characteristics: [
                Characteristic(id: "level", uuid: BluetoothUUID(0x2A19), properties: [.read], value: .dynamic([100]))
            ])
        let backend: BlueZBackend
        do {
            backend = try await BlueZBackend(
                bus: bus, adapter: adapter,
                options: BlueZOptions(pairing: PairingSettings(), deviceName: nil), logger: logger)
        } catch {
            return HostFinding("trial", .fail, "cannot open \(adapter) through bluetoothd: \(error)")
        }
        let manager = PeripheralManager(backend: backend, handler: ProfileServer(logger: logger), logger: logger)
        var steps: [String] = []
        do {
            try await manager.waitUntilPoweredOn()
            try await manager.publish(service)
            steps.append("RegisterApplication ok")
            try await manager.startAdvertising(Advertisement(localName: "blemu doctor", serviceUUIDs: [service.uuid]))
            steps.append("RegisterAdvertisement ok")
            try await manager.stopAdvertising()
            steps.append("UnregisterAdvertisement ok")
            try await manager.remove(service)
            steps.append("UnregisterApplication ok")
            await backend.shutdown()
            return HostFinding("trial", .ok, steps.joined(separator: ", "))
        } catch {
            await backend.shutdown()
            let answer = "\(error)"
            let pair = steps.count == 1 ? KernelBlueZPair.explainAdvertisingFailure(kernel: kernel, bluez: bluez) : nil
            return HostFinding(
                "trial", .fail,
                (steps + ["then \(answer)"]).joined(separator: ", ") + (pair.map { ": confirmed: \($0)" } ?? ""),
                fix: pair == nil ? "see bluetoothd's journal (journalctl -u bluetooth) for what it logged" : nil)
        }
    }

    /// The executable of the process owning org.bluez, when this user may read its link.
    static func bluetoothdPath(pid: UInt32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    }

    /// bluetoothd's object tree by path and interface.
    static func managedObjects(_ connection: BusConnection) async throws -> [ObjectPath: [String: [String: DBusValue]]]
    {
        let reply = try await connection.call(
            BlueZName.service, path: .root, interface: BlueZName.FreeDesktop.objectManager,
            member: BlueZName.FreeDesktop.getManagedObjects, timeout: .seconds(5))
        var objects: [ObjectPath: [String: [String: DBusValue]]] = [:]
        for entry in (try? reply.first?.asEntries()) ?? [] {
            guard case .objectPath(let path) = entry.key else { continue }
            for interface in (try? entry.value.asEntries()) ?? [] {
                guard case .string(let name) = interface.key else { continue }
                objects[path, default: [:]][name] = (try? interface.value.asVardict()) ?? [:]
            }
        }
        return objects
    }
}
