import Foundation

@testable import Lab

/// One boot for the peripheral's life around bluetoothd, told with the real `blemu run` on hci0 and a python3-dbus
/// central on hci1 by a guest script that leaves its evidence in the results directory:
///
/// 1. the central finds, connects and reads (the baseline);
/// 2. bluetoothd is killed and started again with its own command line: blemu must notice, register everything
///    again and say so, and the central must find and read it again;
/// 3. hci0 is powered off and on with btmgmt: blemu must report both changes and advertise again;
/// 4. the central reads `hang-up`, whose first read fires the profile's `disconnect` fault: the central's
///    Device1.Connected must go false without the central asking;
/// 5. a central subscribes to `beat` and stays; blemu is killed with SIGKILL and started again with the same
///    `--restore-id`: is the central still connected, is it subscribed to the new run, does a value reach it?
///
/// Before each read the central removes its device object, so finding the peripheral again needs a fresh
/// advertisement, not bluetoothd's cache.
enum LifecycleScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The profile the script runs.
    static let profile = LabScenario.fixtures + "/lab-lifecycle.yaml"
    /// The marker's value as the central prints it (u16 0xBEEF, little endian, uppercase hex).
    static let markerHex = "EFBE"
    /// The reads the central makes, one result file each, in order.
    static let reads = ["central-1.txt", "central-2-after-restart.txt", "central-3-after-power-cycle.txt"]
    /// UUIDs, lower case as bluetoothd spells them.
    static let markerUUID = "8d3a1002-6b1e-4c2f-9a57-3e2c1d0b4f61"
    static let hangUpUUID = "8d3a1003-6b1e-4c2f-9a57-3e2c1d0b4f61"
    static let beatUUID = "8d3a1004-6b1e-4c2f-9a57-3e2c1d0b4f61"
    /// The restore identifier both `blemu run`s share (the second one reports the saved subscription).
    static let restoreID = "lab-lifecycle"

    private static func boot(bluez: BlueZInstall) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        try centralScript.write(toFile: results + "/central.py", atomically: true, encoding: .utf8)
        try guestScript.write(toFile: results + "/lifecycle.sh", atomically: true, encoding: .utf8)
        // No profiles for the stack to start: the script runs blemu itself on hci0.
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(240), on: bluez,
            running: [
                "/bin/sh", results + "/lifecycle.sh",
            ])
    }

    /// A central on bluetoothd's client API: `central.py ADAPTER ADDRESS read|hang-up|hold DIR`. Forgets the
    /// device, discovers it afresh, connects, reads the marker; `read` then disconnects, `hang-up` reads `hang-up`
    /// and waits for the link to drop without asking, `hold` subscribes to `beat` and prints each value that
    /// arrives and each change of `Connected` until DIR/hold-done exists. One line per result; exits non-zero with
    /// a reason on stderr.
    static let centralScript = """
        import os, sys, time
        sys.path.insert(0, \(LabScenario.pythonQuoted(LabScenario.fixtures)))
        import dbus
        from lab_central import Central, fail, hexed

        central = Central(sys.argv[1], sys.argv[2])
        mode = sys.argv[3]
        central.forget()
        start = time.monotonic()
        central.discover(20)
        print('found after %.1f s' % (time.monotonic() - start), flush=True)
        central.connect()
        print('connected', flush=True)
        device, properties, characteristic = central.device, central.properties, central.characteristic

        print('read', hexed(characteristic('\(markerUUID)').ReadValue({})), flush=True)
        if mode == 'read':
            device.Disconnect()
            print('disconnected', flush=True)
            sys.exit(0)
        if mode == 'hold':
            beat = characteristic('\(beatUUID)')
            beat_properties = dbus.Interface(beat.proxy_object, 'org.freedesktop.DBus.Properties')
            beat.StartNotify()
            print('subscribed', flush=True)
            # Notifications update the cached Value (no ATT read): poll it and Connected until told to stop. When
            # the peripheral's services go (Service Changed), the object goes too: look for its successor.
            value, connected = None, True
            while not os.path.exists(sys.argv[4] + '/hold-done'):
                try:
                    now = hexed(beat_properties.Get('org.bluez.GattCharacteristic1', 'Value'))
                except dbus.DBusException as error:
                    print('beat object gone:', error.get_dbus_name(), flush=True)
                    path = central.characteristic_path('\(beatUUID)', 10)
                    if path is None:
                        print('beat not found again in 10 s', flush=True)
                        break
                    beat_properties = dbus.Interface(central.bus.get_object('org.bluez', path),
                                                     'org.freedesktop.DBus.Properties')
                    notifying = beat_properties.Get('org.bluez.GattCharacteristic1', 'Notifying')
                    print('beat found again at', path, 'notifying', bool(notifying), flush=True)
                    value = None
                    continue
                if now != value:
                    value = now
                    print('value', value, flush=True)
                is_connected = bool(properties.Get('org.bluez.Device1', 'Connected'))
                if is_connected != connected:
                    connected = is_connected
                    print('connected', connected, flush=True)
                time.sleep(0.1)
            print('done, connected', connected, flush=True)
            sys.exit(0)
        print('hang-up read', hexed(characteristic('\(hangUpUUID)').ReadValue({})), flush=True)
        start = time.monotonic()
        while properties.Get('org.bluez.Device1', 'Connected'):
            if time.monotonic() - start > 15:
                fail('still connected 15 s after reading hang-up')
            time.sleep(0.1)
        print('link dropped by the peripheral after %.1f s' % (time.monotonic() - start), flush=True)

        """

    /// The guest's command. Every wait is a bounded poll; a failed step writes its reason to `scenario-failure`,
    /// stops blemu and exits 1. Progress goes to `scenario-steps` (`<uptime> <step>`).
    static let guestScript: String = {
        let blemu = GuestStack.shellQuote(LabScenario.blemuExecutable)
        return """
            #!/bin/sh
            R="$BLEMU_LAB_RESULTS"
            SCENARIO=lifecycle
            . \(GuestStack.shellQuote(LabScenario.fixtures + "/guest-lib.sh"))
            B=\(blemu)
            PROFILE=\(GuestStack.shellQuote(profile))
            LOG="$R/blemu-run.log"
            EVENTS="$R/events.jsonl"
            # The control socket lives on the VM's tmpfs: the results share is 9p.
            SOCK=/run/blemu-lab-lifecycle.sock
            blemu_pid=

            bluez_owned() {
                dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner \\
                    string:org.bluez | grep -q 'boolean true'
            }
            bluez_gone() { ! bluez_owned; }
            bluez_get() { # OBJECT INTERFACE PROPERTY
                dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" \\
                    org.freedesktop.DBus.Properties.Get "string:org.bluez.$2" "string:$3"
            }
            powered() { bluez_get "$1" Adapter1 Powered | grep -q 'boolean true'; }
            advertising() { bluez_get hci0 LEAdvertisingManager1 ActiveInstances | grep -q 'byte [1-9]'; }
            logged() { grep -q "$1" "$LOG"; }
            # count_of PATTERN: how many lines of blemu's log match.
            count_of() { grep -c "$1" "$LOG"; }
            more_than() { [ "$(count_of "$1")" -gt "$2" ]; }
            event() { grep -q "$1" "$EVENTS"; }
            events_more_than() { [ "$(grep -c "$1" "$EVENTS")" -gt "$2" ]; }
            central() { # RESULT-FILE MODE
                /usr/bin/python3 "$R/central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" "$2" \\
                    > "$R/$1" 2>&1 || fail "the central ($2) failed: $(cat "$R/$1")"
            }

            step start
            export XDG_STATE_HOME="$R/state"
            "$B" run "$PROFILE" --adapter "$BLEMU_LAB_PERIPHERAL" --control "$SOCK" --events "$EVENTS" \\
                --restore-id \(restoreID) </dev/null >"$LOG" 2>&1 &
            blemu_pid=$!
            within 20 "blemu run to advertise (see blemu-run.log)" logged '^advertising "'

            step read-1
            central \(reads[0]) read

            step restart-bluetoothd
            # bluetoothd as the lab stack started it (GuestStack.swift): the same command line, read from /proc.
            bluetoothd_pid=$(dbus-send --system --print-reply --dest=org.freedesktop.DBus / \\
                org.freedesktop.DBus.GetConnectionUnixProcessID string:org.bluez | sed -n 's/.*uint32 //p')
            [ -n "$bluetoothd_pid" ] || fail "no pid for org.bluez"
            tr '\\0' ' ' < "/proc/$bluetoothd_pid/cmdline" > "$R/bluetoothd-cmdline.txt"
            registered_before=$(count_of 'registered agent, application, advertisement again')
            kill -TERM "$bluetoothd_pid"
            within 10 "bluetoothd to exit" exited "$bluetoothd_pid"
            within 10 "org.bluez to leave the bus" bluez_gone
            within 10 "blemu to notice bluetoothd left" logged 'left the bus'
            $(cat "$R/bluetoothd-cmdline.txt") >"$R/bluetoothd-restarted.log" 2>&1 &
            within 20 "org.bluez back on the bus" bluez_owned
            within 20 "hci0 powered by the new bluetoothd" powered hci0
            within 20 "hci1 powered by the new bluetoothd" powered hci1
            within 30 "blemu to register again (see blemu-run.log)" \\
                more_than 'registered agent, application, advertisement again' "$registered_before"
            within 20 "the advertisement to be active again" advertising

            step read-2
            central \(reads[1]) read

            step power-cycle
            # Counted from here: the restart may have logged power changes of its own.
            offs=$(count_of 'adapter hci0 powered off'); ons=$(count_of 'adapter hci0 powered on')
            off_events=$(grep -c '"state":"poweredOff"' "$EVENTS"); on_events=$(grep -c '"state":"poweredOn"' "$EVENTS")
            echo "$offs $ons $off_events $on_events" > "$R/power-counts-before.txt"
            btmgmt --index 0 power off > "$R/btmgmt-off.txt" 2>&1 || fail "btmgmt power off: $(cat "$R/btmgmt-off.txt")"
            within 10 "blemu to report hci0 powered off" more_than 'adapter hci0 powered off' "$offs"
            within 10 "a poweredOff event" events_more_than '"state":"poweredOff"' "$off_events"
            btmgmt --index 0 power on > "$R/btmgmt-on.txt" 2>&1 || fail "btmgmt power on: $(cat "$R/btmgmt-on.txt")"
            within 10 "blemu to report hci0 powered on" more_than 'adapter hci0 powered on' "$ons"
            within 10 "a poweredOn event" events_more_than '"state":"poweredOn"' "$on_events"
            within 20 "blemu to register the advertisement again after power on" \
                logged 'advertisement registered again after power on'
            within 20 "the advertisement to be active after power on" advertising
            bluez_get hci0 LEAdvertisingManager1 ActiveInstances > "$R/active-instances-after-power-on.txt" 2>&1

            step read-3
            central \(reads[2]) read

            step hang-up
            central central-hang-up.txt hang-up
            within 10 "the disconnect fault in the event log" event '"fault":"disconnect"'

            step crash-restart
            # poll SECONDS COMMAND [ARGS]: like within, but only reports (0 or 1): what happens here is the finding.
            # Timed by the clock, not by tries: one `blemu ctl` costs about a second under TCG.
            poll() {
                end=$(awk -v s="$1" '{ print $1 + s }' /proc/uptime); shift
                until "$@" >/dev/null 2>&1; do
                    awk -v e="$end" '{ exit !($1 >= e) }' /proc/uptime && return 1
                    sleep 0.2
                done
            }
            holding() { grep -q "$1" "$R/central-hold.txt"; }
            beat_subscribed() { "$B" ctl "$SOCK" centrals > "$R/$1" && grep -q '"beat"' "$R/$1"; }
            /usr/bin/python3 "$R/central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" hold "$R" \\
                > "$R/central-hold.txt" 2>&1 &
            hold_pid=$!
            within 40 "the holding central to subscribe to beat" holding '^subscribed'
            within 10 "blemu to see the subscription to beat" beat_subscribed ctl-centrals-1.json
            "$B" ctl "$SOCK" set beat 11 > "$R/ctl-set-beat-1.json" 2>&1
            within 10 "the holding central to receive 11" holding '^value 11'
            "$B" ctl "$SOCK" counters > "$R/ctl-counters.json" 2>&1
            kill -9 "$blemu_pid"
            within 5 "blemu run to die of SIGKILL" exited "$blemu_pid"
            wait "$blemu_pid"
            LOG="$R/blemu-run-2.log"
            "$B" run "$PROFILE" --adapter "$BLEMU_LAB_PERIPHERAL" --control "$SOCK" --events "$R/events-2.jsonl" \\
                --restore-id \(restoreID) </dev/null >"$LOG" 2>&1 &
            blemu_pid=$!
            within 20 "the second blemu run to advertise (see blemu-run-2.log)" logged '^advertising "'
            device="/org/bluez/$BLEMU_LAB_CENTRAL/dev_$(echo "$BLEMU_LAB_PERIPHERAL_ADDRESS" | tr ':' '_')"
            dbus-send --system --print-reply --dest=org.bluez "$device" org.freedesktop.DBus.Properties.Get \\
                string:org.bluez.Device1 string:Connected > "$R/hold-connected-after-restart.txt" 2>&1
            if poll 10 beat_subscribed ctl-centrals-2.json; then echo yes; else echo no; fi > "$R/resubscribed.txt"
            "$B" ctl "$SOCK" set beat 22 > "$R/ctl-set-beat-2.json" 2>&1
            if poll 5 holding '^value 22'; then echo yes; else echo no; fi > "$R/value-after-restart.txt"
            : > "$R/hold-done"
            within 10 "the holding central to finish" exited "$hold_pid"

            step stop
            kill -TERM "$blemu_pid"
            within 10 "blemu run to stop on SIGTERM" exited "$blemu_pid"
            wait "$blemu_pid"
            echo $? > "$R/blemu-run-rc"
            step done
            echo "lifecycle scenario done"

            """
    }()
}
