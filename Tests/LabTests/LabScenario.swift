import Foundation
import Logging

@testable import Lab

/// The one VM boot the lab tests share: a stand-in peripheral on hci0, `blemu probe` and then a python central on
/// hci1, a scenario that records what it saw in the results directory and exits 3. Booting costs ~20 s of TCG, so
/// tests await this one run and assert on its files.
actor LabScenario {
    /// The shared scenario; boots on first use.
    static let shared = LabScenario(boot: bootScenario)

    /// The built blemu next to the test bundle (`swift test` builds every product); visible in the VM through the
    /// read-only root share, since .build is not under /tmp.
    static let blemuExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("blemu").path

    /// Seconds `blemu probe` listens for notifications in the scenarios; short, to keep each boot well under a
    /// minute.
    static let probeListenSeconds = 1

    /// True when this machine has everything the scenario needs (the rig plus python3-dbus and python3-gi) and
    /// `BLEMU_LAB_TESTS=0` does not ask to skip the ~20 s boot.
    static let isAvailable =
        ProcessInfo.processInfo.environment["BLEMU_LAB_TESTS"] != "0" && LabPrerequisites.check().isComplete

    /// The local name the stand-in peripheral advertises; the central must report it.
    static let localName = "blemu-lab"
    /// The exit code the scenario's command ends with, to prove it is propagated.
    static let commandExitCode: Int32 = 3
    /// Controllers booted: one more than the default, to exercise `--controllers`.
    static let controllers = 3

    private let bootScenario: @Sendable (BlueZInstall) async throws -> LabRun
    private var boots: [String: Task<LabRun, any Error>] = [:]

    /// A scenario that boots with `boot` on first use, once per BlueZ version.
    init(boot: @escaping @Sendable (BlueZInstall) async throws -> LabRun) { bootScenario = boot }

    /// The run on `bluez`, booting it on the first call for that version; every caller gets the same run or the
    /// same error.
    func run(on bluez: BlueZInstall) async throws -> LabRun {
        if let boot = boots[bluez.version] { return try await boot.value }
        let task = Task { [bootScenario] in
            try await LabBootGate.shared.admitted { try await bootScenario(bluez) }
        }
        boots[bluez.version] = task
        return try await task.value
    }

    /// Every BlueZ the lab can boot here (the system's 5.66 and the 5.82 scripts/build-bluez makes), each scenario's
    /// tests run once per version; `BLEMU_LAB_BLUEZ=5.82` (comma-separated) narrows the list.
    static let versions: [BlueZInstall] = {
        let all = BlueZInstall.available()
        guard let wanted = ProcessInfo.processInfo.environment["BLEMU_LAB_BLUEZ"]?.split(separator: ",") else {
            return all
        }
        return all.filter { wanted.contains(Substring($0.version)) }
    }()

    /// The checkout's root, found from this file.
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Boots `configuration` and runs `command` in the VM, logging the bring-up at info (what a failing test shows).
    static func boot(_ configuration: LabConfiguration, running command: [String]) async throws -> LabRun {
        var logger = Logger(label: "blemu.lab.tests")
        logger.logLevel = .info
        return try await LabMachine(configuration: configuration, logger: logger).run(command)
    }

    /// Boots a scenario whose guest script runs blemu itself: `controllers` controllers, no profiles for the stack to
    /// start, the checkout as working directory, 30 s per bring-up step; `results` already holds the script's files.
    static func bootScripted(
        in results: String, controllers: Int = 2, timeout: Duration, on bluez: BlueZInstall, running command: [String]
    ) async throws -> LabRun {
        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: controllers, timeout: timeout, stepTimeout: .seconds(30),
            workingDirectory: package, bluez: bluez)
        return try await boot(configuration, running: command)
    }

    /// Tests/LabTests/Fixtures: profiles, guest scripts and helpers the scenarios run in the VM.
    static let fixtures = package + "/Tests/LabTests/Fixtures"

    /// `text` as a Python string literal, for paths written into generated Python scripts.
    static func pythonQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// A fresh results directory (the VM's work share) under .build, outside /tmp: kept after the run for
    /// reading, ignored by git.
    static func freshResultsDirectory() throws -> String {
        try LabConfiguration.makeFreshResultsDirectory(under: package + "/.build")
    }

    /// Writes the scenario's files into a fresh results directory and boots.
    private static func bootScenario(bluez: BlueZInstall) async throws -> LabRun {
        let results = try freshResultsDirectory()
        let advertiser = results + "/fake-blemu"
        try advertiserScript.write(toFile: advertiser, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: advertiser)
        try centralScript.write(toFile: results + "/central.py", atomically: true, encoding: .utf8)
        try scenarioScript.write(toFile: results + "/scenario.sh", atomically: true, encoding: .utf8)
        try "name: lab-test\n".write(toFile: results + "/lab-test.yaml", atomically: true, encoding: .utf8)

        let configuration = LabConfiguration(
            resultsDirectory: results, controllers: controllers, profiles: [results + "/lab-test.yaml"],
            timeout: .seconds(240), stepTimeout: .seconds(60), blemuExecutable: advertiser, bluez: bluez)
        return try await LabScenario.boot(
            configuration,
            running: [
                "/bin/sh", results + "/scenario.sh",
            ])
    }

    /// Stands in for `blemu run --adapter hciN --bus system PROFILE` (which another module provides): registers one
    /// connectable LE advertisement with bluetoothd on the adapter, as BlueZ's test/example-advertisement does, and
    /// unregisters it on SIGTERM.
    static let advertiserScript = """
        #!/usr/bin/python3
        import signal, sys
        import dbus, dbus.mainloop.glib, dbus.service
        from gi.repository import GLib

        args = sys.argv[1:]
        adapter = args[args.index('--adapter') + 1]
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.SystemBus()
        loop = GLib.MainLoop()
        PATH = '/org/blemu/lab/advertisement0'

        class Advertisement(dbus.service.Object):
            @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
            def GetAll(self, interface):
                return {'Type': 'peripheral', 'LocalName': '\(localName)', 'Discoverable': dbus.Boolean(True),
                        'ServiceUUIDs': dbus.Array(['180d'], signature='s')}

            @dbus.service.method('org.bluez.LEAdvertisement1')
            def Release(self):
                loop.quit()

        advertisement = Advertisement(bus, PATH)
        manager = dbus.Interface(bus.get_object('org.bluez', '/org/bluez/' + adapter),
                                 'org.bluez.LEAdvertisingManager1')

        def failed(error):
            print('register failed:', error, flush=True)
            loop.quit()
            sys.exit(2)

        def stop():
            manager.UnregisterAdvertisement(PATH)
            print('unregistered', flush=True)
            loop.quit()

        manager.RegisterAdvertisement(PATH, {}, reply_handler=lambda: print('advertising on', adapter, flush=True),
                                      error_handler=failed)
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, stop)
        loop.run()

        """

    /// A central on bluetoothd's D-Bus client API (docs/lab.md: fastest and deterministic): LE discovery until the
    /// peripheral's address shows up, then Connect and wait for ServicesResolved. Prints one line per milestone.
    static let centralScript = """
        import sys, time
        import dbus

        adapter_name, target = sys.argv[1], sys.argv[2].upper()
        bus = dbus.SystemBus()
        adapter_path = '/org/bluez/' + adapter_name
        adapter = dbus.Interface(bus.get_object('org.bluez', adapter_path), 'org.bluez.Adapter1')
        manager = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')

        def find(predicate, seconds):
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                for path, interfaces in manager.GetManagedObjects().items():
                    if predicate(path, interfaces):
                        return path, interfaces
                time.sleep(0.2)
            return None, None

        adapter.SetDiscoveryFilter({'Transport': 'le'})
        adapter.StartDiscovery()
        start = time.monotonic()
        path, interfaces = find(lambda p, i: 'org.bluez.Device1' in i
                                and i['org.bluez.Device1'].get('Adapter') == adapter_path
                                and str(i['org.bluez.Device1'].get('Address', '')).upper() == target, 30)
        if path is None:
            print('not found', target, flush=True)
            sys.exit(1)
        device = interfaces['org.bluez.Device1']
        print('found', device['Address'], 'name', device.get('Name', '?'), 'after %.1f s' % (time.monotonic() - start),
              flush=True)
        adapter.StopDiscovery()
        dbus.Interface(bus.get_object('org.bluez', path), 'org.bluez.Device1').Connect(timeout=30)
        print('connected', flush=True)
        properties = dbus.Interface(bus.get_object('org.bluez', path), 'org.freedesktop.DBus.Properties')
        deadline = time.monotonic() + 20
        while not properties.Get('org.bluez.Device1', 'ServicesResolved'):
            if time.monotonic() > deadline:
                print('services not resolved', flush=True)
                sys.exit(2)
            time.sleep(0.2)
        print('services resolved', flush=True)
        services = [str(i['org.bluez.GattService1']['UUID']) for p, i in manager.GetManagedObjects().items()
                    if p.startswith(path + '/') and 'org.bluez.GattService1' in i]
        print('services', ' '.join(sorted(services)), flush=True)

        """

    /// The command: records the environment and bluetoothd's view, then runs the central against the peripheral.
    static let scenarioScript = """
        #!/bin/sh
        R="$BLEMU_LAB_RESULTS"
        env | grep '^BLEMU_LAB' | sort > "$R/env.txt"
        dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects \\
            > "$R/objects.txt" 2>&1
        pid=$(dbus-send --system --print-reply --dest=org.freedesktop.DBus / \\
            org.freedesktop.DBus.GetConnectionUnixProcessID string:org.bluez | sed -n 's/.*uint32 //p')
        echo "org.bluez $(cat /proc/$pid/comm)" > "$R/owner.txt"
        # blemu probe first, while the peripheral is fresh: it must discover it, not find it already connected.
        if [ -x \(GuestStack.shellQuote(blemuExecutable)) ]; then
            \(GuestStack.shellQuote(blemuExecutable)) probe --adapter "$BLEMU_LAB_CENTRAL" --listen \(probeListenSeconds) \\
                --timeout 15 --json "$BLEMU_LAB_PERIPHERAL_ADDRESS" > "$R/probe.json" 2> "$R/probe.err"
            echo $? > "$R/probe-rc"
        else
            echo "no blemu at \(blemuExecutable)" > "$R/probe.err"
        fi
        /usr/bin/python3 "$R/central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" > "$R/central.txt" 2>&1
        echo "central exited $?" >> "$R/central.txt"
        echo "scenario done, exiting \(commandExitCode)"
        exit \(commandExitCode)

        """
}
