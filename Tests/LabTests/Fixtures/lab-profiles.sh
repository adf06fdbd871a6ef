#!/bin/sh
# The profiles scenario's guest script (ProfilesScenario.swift), run in the VM by `blemu lab run`:
#   lab-profiles.sh PARAMETERS PROFILE-LIST
# PARAMETERS is a shell file of the values the Swift side computes and its tests assert on; PROFILE-LIST has one
# bundled profile per line. The stories run in order, each in a subshell so that one failing does not stop the
# others. Every wait is a bounded poll; a failed story writes its reason to `<story>.failure`, kills what it
# started and ends with 1 in `<story>.rc`. Progress goes to `scenario-steps` (`<uptime> <story>`).
R="$BLEMU_LAB_RESULTS"
here=$(dirname "$0")
# shellcheck source=guest-lib.sh
. "$here/guest-lib.sh"
# The parameters ProfilesScenario.swift computes (the values its tests assert on), as shell assignments.
# shellcheck source=/dev/null # written per run by ProfilesScenario.swift
. "$1"
ADDR="$BLEMU_LAB_PERIPHERAL_ADDRESS"
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
# btmon writes the 16-byte btsnoop header, then the controllers' index events once it is listening.
capturing() { [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt 16 ]; }
forget_all() {
    forget hci1 "$ADDR"; forget hci2 "$ADDR"; forget hci2 "$BYSTANDER"
}
# notify-central.py in the background: NAME ADAPTER UUID END-HEX; its log is NAME.log, values NAME.values.
start_central() {
    /usr/bin/python3 "$here/notify-central.py" "$2" "$ADDR" "$3" "$R/$1.values" "$4" "$CENTRAL_SECONDS" \
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
    within $((CENTRAL_SECONDS + 10)) "the central $1 to finish" exited "$(central_pid "$1")"
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
    "$B" probe --adapter "$BLEMU_LAB_CENTRAL" --name "$3" --service "$4" --listen 0.5 --timeout 20 --json \
        "$ADDR" > "$R/$1-probe.json" 2> "$R/$1-probe.err"
    echo $? > "$R/$1-probe-rc"
    stop_blemu "$R/$1-run-rc"
    kill -INT "$btmon_pid"
    within 5 "btmon to stop" exited "$btmon_pid"
    cp "/run/$1.btsnoop" "$R/$1.btsnoop"
}
# One story per profile, from the list ProfilesScenario.swift writes: NAME PATH LOCAL-NAME UUID, tab-separated.
while IFS='	' read -r name path local uuid <&3; do
    story "profile-$name" probe_profile "$name" "$path" "$local" "$uuid"
done 3< "$2"

# Story 3: two centrals subscribe to one characteristic; blemu ctl sets values while both listen.
two_centrals() {
    forget_all
    # btvirt 5.66 tells the peripheral the central's handle for a new LE link, not its own
    # (emulator/btdev.c `le_ext_conn_complete`): a second link to hci0 only works when its central already
    # holds a link with the handle of hci0's first one. So hci2 first connects to a bystander, hci3,
    # advertising through bluetoothd; then both links to hci0 have the same handle at both ends.
    /usr/bin/python3 "$here/fake-blemu" --adapter hci3 > "$R/two-bystander.log" 2>&1 &
    bystander_pid=$!
    track $bystander_pid
    within 20 "hci3 to advertise" grep -q "advertising on" "$R/two-bystander.log"
    /usr/bin/python3 "$here/notify-central.py" hci2 "$BYSTANDER" hold - - "$CENTRAL_SECONDS" \
        > "$R/two-hold.log" 2>&1 &
    hold_pid=$!
    track $hold_pid
    within 40 "hci2 to connect to hci3" grep -q connected "$R/two-hold.log"
    start_blemu "$NOTIFY_PROFILE" "$R/two-run.log" --control "$SOCK" --events /run/two-events.jsonl
    start_central two-hci1 hci1 "$NOTIFY_UUID" "$LAST_TEMPERATURE"
    within 40 "the central on hci1 to subscribe" subscribed two-hci1
    # The controller ends an advertising set when a central connects through it, and neither the kernel
    # nor bluetoothd 5.66 starts it again: advertise anew so that the second central finds hci0.
    "$B" ctl "$SOCK" advertising start > "$R/two-readvertise.json" 2>&1 \
        || fail "blemu ctl advertising start failed: $(cat "$R/two-readvertise.json")"
    start_central two-hci2 hci2 "$NOTIFY_UUID" "$LAST_TEMPERATURE"
    within 40 "the central on hci2 to subscribe" subscribed two-hci2
    "$B" ctl "$SOCK" centrals > "$R/two-centrals.json" 2>&1
    # Core Bluetooth's onSubscribedCentrals: the current value to hci1's central only. bluetoothd 5.76+
    # gives each device its own notify socket, so only hci1 gets it; 5.66 has one central, "*", for
    # both, and the targeted notify is refused.
    hci1_device="/org/bluez/hci0/dev_$(sed -n 's/^hci1 //p' "$R/controllers" | tr : _)"
    "$B" ctl "$SOCK" notify "$NOTIFY_ID" --central "$hci1_device" > "$R/two-targeted.json" 2>&1
    echo $? > "$R/two-targeted-rc"
    for value in $TEMPERATURES; do
        "$B" ctl "$SOCK" set "$NOTIFY_ID" --field "$NOTIFY_FIELD=$value" > /dev/null 2>&1 \
            || fail "blemu ctl set $NOTIFY_ID $value failed"
    done
    finish_central two-hci1
    finish_central two-hci2
    # Both disconnected: blemu hears it from bluetoothd's Device1 objects a moment later. Only the connected list
    # counts: the answer's `disconnects` (after it: keys are sorted) names the devices that left.
    no_devices() {
        "$B" ctl "$SOCK" centrals > "$R/two-centrals-after.json" 2>&1 \
            && ! sed 's/"disconnects":.*//' "$R/two-centrals-after.json" | grep -q dev_
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
    start_blemu "$NOTIFY_PROFILE" "$R/flood-run.log" --control "$SOCK" --events /run/flood-events.jsonl
    start_central flood hci1 "$NOTIFY_UUID" "$LAST_FLOOD"
    within 40 "the flood's central to subscribe" subscribed flood
    bluetoothd=$(dbus-send --system --print-reply --dest=org.freedesktop.DBus / \
        org.freedesktop.DBus.GetConnectionUnixProcessID string:org.bluez | sed -n 's/.*uint32 //p')
    [ -n "$bluetoothd" ] || fail "no process owns org.bluez"
    kill -STOP "$bluetoothd"
    stopped=$bluetoothd
    /usr/bin/python3 "$here/ctl-burst.py" "$SOCK" "$NOTIFY_ID" "$NOTIFY_FIELD" "$FLOOD_FIRST" \
        "$FLOOD_LAST" > "$R/flood-burst.txt" 2>&1 || fail "ctl-burst: $(cat "$R/flood-burst.txt")"
    "$B" ctl "$SOCK" counters > "$R/flood-counters-stalled.json" 2>&1
    kill -CONT "$bluetoothd"
    stopped=
    finish_central flood
    "$B" ctl "$SOCK" counters > "$R/flood-counters.json" 2>&1
    stop_blemu "$R/flood-run-rc"
    cp /run/flood-events.jsonl "$R/flood-events.jsonl"
}
story flood flood

# Story 5: a transfer of the long text of lab-transfer.yaml to hci1, in chunks of the link's largest update.
transfer() {
    forget_all
    start_blemu "$R/lab-transfer.yaml" "$R/transfer-run.log" --events /run/transfer-events.jsonl
    start_central transfer hci1 "$TRANSFER_UUID" "$END_OF_MESSAGE"
    finish_central transfer
    stop_blemu "$R/transfer-run-rc"
    cp /run/transfer-events.jsonl "$R/transfer-events.jsonl"
}
story transfer transfer
step 'done'
echo "profiles scenario done"
