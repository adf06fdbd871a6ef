import Foundation

@testable import Lab

/// One boot for two stories told with the real `blemu run` on hci0 and centrals on hci1, by a guest script that
/// drives every process itself and leaves its evidence in the results directory:
///
/// 1. a thermostat steered through `blemu ctl` while `blemu probe --listen` watches its temperature;
/// 2. a set point written by a python3-dbus central, `kill -9` of blemu, a restart with the same `--restore-id`,
///    and the central reading the set point back.
///
/// It runs Fixtures/lab-thermostat.yaml, not profiles/thermostat.yaml: that profile's set point needs encryption
/// to write, and its schedules notify temperatures of their own (the fixture's header says more).
enum ThermostatScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// The profile both stories run.
    static let profile = LabScenario.fixtures + "/lab-thermostat.yaml"
    /// The restore identifier both `blemu run`s share.
    static let restoreID = "lab-thermostat"
    /// Temperatures set through `blemu ctl`, in centidegrees, in order.
    static let temperatures = [2300, 2450, 2275]
    /// The set point the profile starts with (21.00 °C) and the one the central writes (24.00 °C), s16 LE hex.
    static let initialSetPoint = "3408"
    static let writtenSetPoint = "6009"
    /// How long the probe listens after subscribing: room for three `blemu ctl` processes under TCG, each of
    /// which took 3-5 s on a loaded 2-core host (6 s was seen to miss the third value).
    static let listenSeconds = 12
    /// The set point's UUID, lower case as bluetoothd spells it.
    static let setPointUUID = "8d3a0002-6b1e-4c2f-9a57-3e2c1d0b4f61"

    /// `value` as the temperature characteristic carries it: s16, little endian, uppercase hex (the probe's
    /// spelling).
    static func hex(centidegrees value: Int) -> String {
        let bits = UInt16(bitPattern: Int16(value))
        return String(format: "%02X%02X", bits & 0xFF, bits >> 8)
    }

    private static func boot(bluez: BlueZInstall) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        try centralScript.write(toFile: results + "/central.py", atomically: true, encoding: .utf8)
        try guestScript.write(toFile: results + "/thermostat.sh", atomically: true, encoding: .utf8)
        // No profiles for the stack to start: the script runs blemu itself on hci0, twice.
        return try await LabScenario.bootScripted(
            in: results, timeout: .seconds(180), on: bluez,
            running: [
                "/bin/sh", results + "/thermostat.sh",
            ])
    }

    /// A central on bluetoothd's client API: `central.py ADAPTER ADDRESS read|write HEX`. Discovers the address,
    /// connects, reads the set point (and writes it with a Write Request for `write`), disconnects. One line per
    /// result: `read HEX`, `wrote HEX`; exits non-zero with a reason on stderr.
    static let centralScript = """
        import sys
        sys.path.insert(0, \(LabScenario.pythonQuoted(LabScenario.fixtures)))
        import dbus
        from lab_central import Central, hexed

        central = Central(sys.argv[1], sys.argv[2])
        mode = sys.argv[3]
        central.discover(20)
        central.connect()
        characteristic = central.characteristic('\(setPointUUID)')
        print('read', hexed(characteristic.ReadValue({})), flush=True)
        if mode == 'write':
            value = bytes.fromhex(sys.argv[4])
            characteristic.WriteValue(dbus.Array(value, signature='y'), {'type': 'request'})
            print('wrote', hexed(value), flush=True)
        central.device.Disconnect()
        print('disconnected', flush=True)

        """

    /// The guest's command. Every wait is a bounded poll; a failed step writes its reason to `scenario-failure`,
    /// stops blemu and exits 1. Progress goes to `scenario-steps` (`<uptime> <step>`).
    static let guestScript: String = {
        let blemu = GuestStack.shellQuote(LabScenario.blemuExecutable)
        let sets = temperatures.map(String.init).joined(separator: " ")
        return """
            #!/bin/sh
            R="$BLEMU_LAB_RESULTS"
            SCENARIO=thermostat
            . \(GuestStack.shellQuote(LabScenario.fixtures + "/guest-lib.sh"))
            B=\(blemu)
            PROFILE=\(GuestStack.shellQuote(profile))
            # The control socket lives on the VM's tmpfs: the results share is 9p, where a socket's inode is not
            # the one connect() finds.
            SOCK=/run/blemu-lab-thermostat.sock
            export XDG_STATE_HOME="$R/state"
            STATE="$XDG_STATE_HOME/blemu/\(restoreID).json"
            blemu_pid=

            start_blemu() { # LOG EVENTS
                "$B" run "$PROFILE" --adapter "$BLEMU_LAB_PERIPHERAL" --control "$SOCK" --events "$2" \\
                    --restore-id \(restoreID) </dev/null >"$1" 2>&1 &
                blemu_pid=$!
            }
            advertising() { # LOG
                exited "$blemu_pid" && fail "blemu run exited before advertising (see $1)"
                grep -q '^advertising "' "$1"
            }
            subscribed_to_temperature() {
                test -s "$R/probe-rc" && fail "blemu probe exited before subscribing: $(tail -5 "$R/probe.err")"
                "$B" ctl "$SOCK" centrals > "$R/ctl-centrals.json" && grep -q '"temperature"' "$R/ctl-centrals.json"
            }

            step first-run
            start_blemu "$R/blemu-run-1.log" "$R/events.jsonl"
            within 20 "the first blemu run to advertise" advertising "$R/blemu-run-1.log"

            step probe
            ( "$B" probe --adapter "$BLEMU_LAB_CENTRAL" --service 181A --listen \(listenSeconds) --timeout 20 --json \\
                "$BLEMU_LAB_PERIPHERAL_ADDRESS" > "$R/probe.json" 2> "$R/probe.err"; echo $? > "$R/probe-rc" ) &
            within 40 "the probe to subscribe to temperature (blemu ctl centrals)" subscribed_to_temperature

            step ctl-set
            i=0
            for value in \(sets); do
                i=$((i + 1))
                "$B" ctl "$SOCK" set temperature --field centidegrees=$value > "$R/ctl-set-$i.json" 2>&1 \\
                    || fail "blemu ctl set temperature $value failed: $(cat "$R/ctl-set-$i.json")"
                sleep 0.3
            done
            "$B" ctl "$SOCK" counters > "$R/ctl-counters.json" 2>&1
            echo $? > "$R/ctl-counters-rc"
            within 30 "the probe to finish listening" test -s "$R/probe-rc"

            step write
            /usr/bin/python3 "$R/central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" write \\
                \(writtenSetPoint) > "$R/central-write.txt" 2>&1 || fail "the writing central failed: $(cat "$R/central-write.txt")"
            within 5 "the state file $STATE to hold the written set point" grep -q '\(writtenSetPoint)' "$STATE"
            cp "$STATE" "$R/state-after-write.json"

            step kill-9
            kill -9 "$blemu_pid"
            within 5 "blemu run to die of SIGKILL" exited "$blemu_pid"
            wait "$blemu_pid"
            echo $? > "$R/blemu-run-1-rc"

            step second-run
            start_blemu "$R/blemu-run-2.log" "$R/events-2.jsonl"
            within 20 "the second blemu run to advertise" advertising "$R/blemu-run-2.log"

            step read
            /usr/bin/python3 "$R/central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" read \\
                > "$R/central-read.txt" 2>&1 || fail "the reading central failed: $(cat "$R/central-read.txt")"

            step stop
            kill -TERM "$blemu_pid"
            within 10 "the second blemu run to stop on SIGTERM" exited "$blemu_pid"
            wait "$blemu_pid"
            echo $? > "$R/blemu-run-2-rc"
            step done
            echo "thermostat scenario done"

            """
    }()
}
