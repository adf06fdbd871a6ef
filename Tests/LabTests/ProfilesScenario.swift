import Foundation

@testable import Lab

/// One boot, four controllers, five stories told with the real `blemu run` on hci0, each starting and stopping its
/// own `blemu run`, by one guest script that leaves its evidence in the results directory:
///
/// 1. every bundled profile (profiles/*.yaml) is probed by `blemu probe --json` on hci1, matched by the name and
///    service UUID `blemu adv` predicts;
/// 2. meanwhile `btmon -w` records what the kernel programs into hci0, to compare with `blemu adv --json`;
/// 3. two centrals (hci1, hci2) subscribe to one characteristic of Fixtures/lab-thermostat.yaml and receive the
///    values set through `blemu ctl` (5.66 sends every datagram to every subscriber: docs/bluez.md);
/// 4. with bluetoothd stopped, more values than its socket and blemu's queue hold: full, ready, retry, no loss;
/// 5. a transfer (profiles/transfer.yaml's shape, with a long text) in chunks of the link's largest update.
///
/// The expected facts (names, UUIDs, bytes, GATT trees) come from `blemu show --json` and `blemu adv --json` run
/// on the host, never from copies in the tests.
enum ProfilesScenario {
    /// Boots on first use; every test awaits the same run.
    static let shared = LabScenario(boot: boot)

    /// One profile of stories 1 and 2 and what the host's blemu predicts for it.
    struct Profile: Sendable {
        /// The file's base name: "heart-rate".
        var name: String
        /// Whether it is one of profiles/*.yaml (else a fixture of the lab's own).
        var isBundled: Bool
        /// Its absolute path.
        var path: String
        /// `blemu adv --json`'s local name, which the probe matches on.
        var localName: String
        /// `blemu adv --json`'s first advertised UUID, which the probe matches on too.
        var firstUUID: String
    }

    /// Every profiles/*.yaml, sorted, then Fixtures/lab-advertising.yaml (what no bundled profile advertises: the
    /// kernel's TX power, service data, an overflowing UUID, a name bluetoothd cuts itself) and
    /// Fixtures/lab-core-bluetooth-name.yaml (a name cut by Core Bluetooth's 8-byte rule), each with the name and
    /// UUID `blemu adv --json` predicts; empty when blemu is missing (the suite is then disabled anyway).
    static let profiles: [Profile] = {
        let directory = LabScenario.package + "/profiles"
        let bundled = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".yaml") }.sorted().map { directory + "/" + $0 }
        let fixtures = ["lab-advertising.yaml", "lab-core-bluetooth-name.yaml"].map { LabScenario.fixtures + "/" + $0 }
        return (bundled + fixtures).compactMap { path in
            guard let plan = try? JSONSerialization.jsonObject(with: blemu(["adv", "--json", path])) as? [String: Any],
                let name = plan["localName"] as? String, let uuid = (plan["advertised"] as? [String])?.first
            else { return nil }
            let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            return Profile(
                name: file, isBundled: bundled.contains(path), path: path, localName: name, firstUUID: uuid)
        }
    }()

    /// The profile of stories 3 and 4: a notifying temperature and no schedules of its own.
    static let notifyProfile = LabScenario.fixtures + "/lab-thermostat.yaml"
    /// The characteristic the centrals subscribe to, its field, and its UUID as bluetoothd spells it.
    static let notifyID = "temperature"
    static let notifyField = "centidegrees"
    static let notifyUUID = "00002a6e-0000-1000-8000-00805f9b34fb"
    /// The temperatures set through `blemu ctl` in story 3, in order; the last one ends each central's wait.
    static let temperatures = Array(2001...2008)

    /// Story 4's values, set back to back while bluetoothd is stopped: more than its notify socket (about 278
    /// small datagrams with Linux's default 208 KiB buffer) and the 16-update queue hold together.
    static let floodValues = Array(1...400)

    /// Story 5's transfer: this many 64-byte lines, sent in chunks of the link's largest update and then "EOM".
    static let transferLines = 500
    /// The transfer's characteristic UUID (profiles/transfer.yaml's).
    static let transferUUID = "2f016955-e675-49a6-9176-111e2a1cf333"
    /// The transfer's text: numbered lines, so a lost, repeated or reordered chunk shows where.
    static let transferText: String = (1...transferLines).map { index in
        let number = String(index)
        let prefix = "line " + String(repeating: "0", count: max(0, 5 - number.count)) + number + " "
        return prefix + String(repeating: "abcdefghijklmnopqrstuvwxyz", count: 3).prefix(63 - prefix.count) + "\n"
    }.joined()
    /// "EOM", as the centrals spell values.
    static let endOfMessage = "454F4D"

    /// How long each central may take from discovery to its last value, in seconds.
    static let centralSeconds = 90

    /// The story names, in the order the script tells them; each leaves `<name>.rc` (and `<name>.failure`).
    static var stories: [String] { profiles.map { "profile-" + $0.name } + ["two-centrals", "flood", "transfer"] }

    /// Runs the host's blemu and returns its stdout (empty on any failure).
    static func blemu(_ arguments: [String]) -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LabScenario.blemuExecutable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return Data() }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }

    /// Story 5's profile: profiles/transfer.yaml's service and characteristic with a text of `transferLines`.
    static var transferProfile: String {
        let lines = transferText.split(separator: "\n").map { "            - { text: \"\($0)\\n\" }" }
        return """
            # Generated by Tests/LabTests/ProfilesScenario.swift: profiles/transfer.yaml with a long text.
            name: Lab Transfer
            advertisement:
              local-name: Transfer
              service-uuids: [E71EE188-279F-4ED6-8055-12D77BFD900C]
            services:
              - id: transfer
                uuid: E71EE188-279F-4ED6-8055-12D77BFD900C
                characteristics:
                  - id: transfer-text
                    uuid: \(transferUUID.uppercased())
                    properties: [notify]
                    initial: { text: "" }
            behaviour:
              schedules:
                - characteristic: transfer-text
                  action: transfer
                  start: first-subscription
                  value:
                    sequence:
                      repeats: false
                      values:
            \(lines.joined(separator: "\n"))
                        - { text: "EOM" }

            """
    }

    private static func boot(bluez: BlueZInstall) async throws -> LabRun {
        let results = try LabScenario.freshResultsDirectory()
        for fixture in ["notify-central.py", "ctl-burst.py"] {
            let text = try String(
                contentsOfFile: LabScenario.fixtures + "/" + fixture, encoding: .utf8)
            try text.write(toFile: results + "/" + fixture, atomically: true, encoding: .utf8)
        }
        try transferProfile.write(toFile: results + "/lab-transfer.yaml", atomically: true, encoding: .utf8)
        try guestScript.write(toFile: results + "/profiles.sh", atomically: true, encoding: .utf8)
        // No profiles for the stack to start: the script runs blemu itself on hci0, once per story. hci3 is only a
        // bystander for story 3 (see the script).
        return try await LabScenario.bootScripted(
            in: results, controllers: 4, timeout: .seconds(420), on: bluez,
            running: [
                "/bin/sh", results + "/profiles.sh",
            ])
    }

    /// The guest's command: the stories in order, each in a subshell so that one failing does not stop the
    /// others. Every wait is a bounded poll; a failed story writes its reason to `<story>.failure`, kills what it
    /// started and ends with 1 in `<story>.rc`. Progress goes to `scenario-steps` (`<uptime> <story>`).
    static var guestScript: String {
        let q = GuestStack.shellQuote
        let probes = profiles.map {
            "story profile-\($0.name) probe_profile \(q($0.name)) \(q($0.path)) \(q($0.localName)) \(q($0.firstUUID))"
        }
        let sets = temperatures.map(String.init).joined(separator: " ")
        let lastTemperature = ThermostatScenario.hex(centidegrees: temperatures.last ?? 0)
        let lastFlood = ThermostatScenario.hex(centidegrees: floodValues.last ?? 0)
        return """
            #!/bin/sh
            R="$BLEMU_LAB_RESULTS"
            . \(GuestStack.shellQuote(LabScenario.fixtures + "/guest-lib.sh"))
            B=\(q(LabScenario.blemuExecutable))
            ADDR="$BLEMU_LAB_PERIPHERAL_ADDRESS"
            DEV="dev_$(echo "$ADDR" | tr : _)"
            BYSTANDER="$(sed -n 's/^hci3 //p' "$R/controllers")"
            # Control sockets, captures and event logs live on the VM's tmpfs: the results share is 9p (slow, and a
            # socket's inode there is not the one connect() finds).
            SOCK=/run/blemu-lab.sock

            # Inside a story: what it started, killed if it fails; bluetoothd is resumed if the story stopped it.
            started=
            stopped=
            track() { started="$started $1"; }
            fail() {
                echo "$*" > "$R/$current.failure"
                echo "story $current failed: $*"
                [ -n "$stopped" ] && kill -CONT "$stopped"
                for pid in $started; do kill -9 "$pid" 2>/dev/null; done
                exit 1
            }
            story() { # NAME FUNCTION [ARGS...]
                current=$1; shift
                step "$current"
                ( "$@" )
                echo $? > "$R/$current.rc"
            }
            start_blemu() { # PROFILE LOG [ARGS...]
                profile=$1; log=$2; shift 2
                "$B" run "$profile" --adapter "$BLEMU_LAB_PERIPHERAL" "$@" </dev/null >"$log" 2>&1 &
                blemu_pid=$!
                track $blemu_pid
                within 20 "blemu run $profile to advertise" advertising "$log"
            }
            advertising() { # LOG
                exited "$blemu_pid" && fail "blemu run exited before advertising (see $1)"
                grep -q '^advertising "' "$1"
            }
            stop_blemu() { # RC-FILE
                kill -TERM "$blemu_pid"
                within 10 "blemu run to stop on SIGTERM" exited "$blemu_pid"
                wait "$blemu_pid"
                echo $? > "$1"
            }
            # btmon writes the 16-byte btsnoop header, then the controllers' index events once it is listening.
            capturing() { [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt 16 ]; }
            # bluetoothd keeps a device object (name, UUIDs, GATT cache) per adapter: each story drops them first,
            # so that every scan starts from nothing. RemoveDevice keeps the cached name (device_remove_stored
            # only drops the cache file's services and attributes), and a new device object loads it, after which
            # a shortened advertised name never replaces it (adapter.c: only when no name is known): remove the
            # file too.
            forget() { # ADAPTER ADDRESS
                dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" org.bluez.Adapter1.RemoveDevice \\
                    "objpath:/org/bluez/$1/dev_$(echo "$2" | tr : _)" >/dev/null 2>&1
                rm -f "/var/lib/bluetooth/$(sed -n "s/^$1 //p" "$R/controllers")/cache/$2"
            }
            forget_all() {
                forget hci1 "$ADDR"; forget hci2 "$ADDR"; forget hci2 "$BYSTANDER"
            }
            # notify-central.py in the background: NAME ADAPTER UUID END-HEX; its log is NAME.log, values NAME.values.
            start_central() {
                /usr/bin/python3 "$R/notify-central.py" "$2" "$ADDR" "$3" "$R/$1.values" "$4" \(centralSeconds) \\
                    > "$R/$1.log" 2>&1 &
                echo $! > "/run/$1.pid"
                track $!
            }
            central_pid() { cat "/run/$1.pid"; }
            subscribed() { # NAME
                grep -q subscribed "$R/$1.log" && return 0
                exited "$(central_pid "$1")" && fail "the central $1 exited: $(tail -3 "$R/$1.log")"
                return 1
            }
            finish_central() { # NAME: waits for it to end, records its exit code in NAME.rc-central
                within \(centralSeconds + 10) "the central $1 to finish" exited "$(central_pid "$1")"
                wait "$(central_pid "$1")"
                echo $? > "$R/$1-central-rc"
            }

            # Stories 1 and 2: each profile probed on hci1 while btmon records what hci0 is programmed with.
            probe_profile() { # NAME PATH LOCAL-NAME UUID
                forget_all
                btmon -w "/run/$1.btsnoop" >/dev/null 2>&1 &
                btmon_pid=$!
                track $btmon_pid
                within 10 "btmon to capture for $1" capturing "/run/$1.btsnoop"
                start_blemu "$2" "$R/$1-run.log"
                "$B" probe --adapter "$BLEMU_LAB_CENTRAL" --name "$3" --service "$4" --listen 0.5 --timeout 20 --json \\
                    "$ADDR" > "$R/$1-probe.json" 2> "$R/$1-probe.err"
                echo $? > "$R/$1-probe-rc"
                stop_blemu "$R/$1-run-rc"
                kill -INT "$btmon_pid"
                within 5 "btmon to stop" exited "$btmon_pid"
                cp "/run/$1.btsnoop" "$R/$1.btsnoop"
            }
            \(probes.joined(separator: "\n"))

            # Story 3: two centrals subscribe to one characteristic; blemu ctl sets values while both listen.
            two_centrals() {
                forget_all
                # btvirt 5.66 tells the peripheral the central's handle for a new LE link, not its own
                # (emulator/btdev.c `le_ext_conn_complete`): a second link to hci0 only works when its central already
                # holds a link with the handle of hci0's first one. So hci2 first connects to a bystander, hci3,
                # advertising through bluetoothd; then both links to hci0 have the same handle at both ends.
                /usr/bin/python3 \(q(LabScenario.advertiser)) --adapter hci3 > "$R/two-bystander.log" 2>&1 &
                bystander_pid=$!
                track $bystander_pid
                within 20 "hci3 to advertise" grep -q "advertising on" "$R/two-bystander.log"
                /usr/bin/python3 "$R/notify-central.py" hci2 "$BYSTANDER" hold - - \(centralSeconds) \\
                    > "$R/two-hold.log" 2>&1 &
                hold_pid=$!
                track $hold_pid
                within 40 "hci2 to connect to hci3" grep -q connected "$R/two-hold.log"
                start_blemu \(q(notifyProfile)) "$R/two-run.log" --control "$SOCK" --events /run/two-events.jsonl
                start_central two-hci1 hci1 \(notifyUUID) \(lastTemperature)
                within 40 "the central on hci1 to subscribe" subscribed two-hci1
                # The controller ends an advertising set when a central connects through it, and neither the kernel
                # nor bluetoothd 5.66 starts it again: advertise anew so that the second central finds hci0.
                "$B" ctl "$SOCK" advertising start > "$R/two-readvertise.json" 2>&1 \\
                    || fail "blemu ctl advertising start failed: $(cat "$R/two-readvertise.json")"
                start_central two-hci2 hci2 \(notifyUUID) \(lastTemperature)
                within 40 "the central on hci2 to subscribe" subscribed two-hci2
                "$B" ctl "$SOCK" centrals > "$R/two-centrals.json" 2>&1
                # Core Bluetooth's onSubscribedCentrals: the current value to hci1's central only. bluetoothd 5.76+
                # gives each device its own notify socket, so only hci1 gets it; 5.66 has one central, "*", for
                # both, and the targeted notify is refused.
                hci1_device="/org/bluez/hci0/dev_$(sed -n 's/^hci1 //p' "$R/controllers" | tr : _)"
                "$B" ctl "$SOCK" notify \(notifyID) --central "$hci1_device" > "$R/two-targeted.json" 2>&1
                echo $? > "$R/two-targeted-rc"
                for value in \(sets); do
                    "$B" ctl "$SOCK" set \(notifyID) --field \(notifyField)=$value > /dev/null 2>&1 \\
                        || fail "blemu ctl set \(notifyID) $value failed"
                done
                finish_central two-hci1
                finish_central two-hci2
                # Both disconnected: blemu hears it from bluetoothd's Device1 objects a moment later.
                no_devices() {
                    "$B" ctl "$SOCK" centrals > "$R/two-centrals-after.json" 2>&1 \\
                        && ! grep -q dev_ "$R/two-centrals-after.json"
                }
                within 15 "blemu ctl centrals to list no device" no_devices
                stop_blemu "$R/two-run-rc"
                cp /run/two-events.jsonl "$R/two-events.jsonl"
                kill -TERM "$hold_pid" "$bystander_pid"
                within 10 "hci2 to leave hci3" exited "$hold_pid"
            }
            story two-centrals two_centrals

            # Story 4: bluetoothd stops reading (SIGSTOP) while blemu ctl sets more values than its notify socket
            # and blemu's queue hold; then it resumes, and the central must get every value, in order.
            flood() {
                forget_all
                start_blemu \(q(notifyProfile)) "$R/flood-run.log" --control "$SOCK" --events /run/flood-events.jsonl
                start_central flood hci1 \(notifyUUID) \(lastFlood)
                within 40 "the flood's central to subscribe" subscribed flood
                bluetoothd=$(dbus-send --system --print-reply --dest=org.freedesktop.DBus / \\
                    org.freedesktop.DBus.GetConnectionUnixProcessID string:org.bluez | sed -n 's/.*uint32 //p')
                [ -n "$bluetoothd" ] || fail "no process owns org.bluez"
                kill -STOP "$bluetoothd"
                stopped=$bluetoothd
                /usr/bin/python3 "$R/ctl-burst.py" "$SOCK" \(notifyID) \(notifyField) \(floodValues.first ?? 0) \\
                    \(floodValues.last ?? 0) > "$R/flood-burst.txt" 2>&1 || fail "ctl-burst: $(cat "$R/flood-burst.txt")"
                "$B" ctl "$SOCK" counters > "$R/flood-counters-stalled.json" 2>&1
                kill -CONT "$bluetoothd"
                stopped=
                finish_central flood
                "$B" ctl "$SOCK" counters > "$R/flood-counters.json" 2>&1
                stop_blemu "$R/flood-run-rc"
                cp /run/flood-events.jsonl "$R/flood-events.jsonl"
            }
            story flood flood

            # Story 5: a transfer of \(transferLines) lines to hci1, in chunks of the link's largest update.
            transfer() {
                forget_all
                start_blemu "$R/lab-transfer.yaml" "$R/transfer-run.log" --events /run/transfer-events.jsonl
                start_central transfer hci1 \(transferUUID) \(endOfMessage)
                finish_central transfer
                stop_blemu "$R/transfer-run-rc"
                cp /run/transfer-events.jsonl "$R/transfer-events.jsonl"
            }
            story transfer transfer
            step done
            echo "profiles scenario done"

            """
    }
}
