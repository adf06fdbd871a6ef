#!/bin/sh
# The lifecycle scenario's guest script (LifecycleScenario.swift), run in the VM by `blemu lab run`:
#   lab-lifecycle.sh BLEMU PROFILE RESTORE_ID
# Serves PROFILE on the peripheral controller and, with lifecycle_central.py on the central controller, reads
# before and after a bluetoothd restart and a power cycle, lets the disconnect fault hang up, and holds a
# subscription across a kill -9 of blemu. Evidence goes to the results directory, one file per step (the names
# LifecycleScenarioTests reads); a failed step writes `scenario-failure` and exits 1. Progress goes to
# `scenario-steps` (`<uptime> <step>`).
R="$BLEMU_LAB_RESULTS"
here=$(dirname "$0")
SCENARIO=lifecycle
# shellcheck source=guest-lib.sh
. "$here/guest-lib.sh"
B=$1 PROFILE=$2 RESTORE_ID=$3
LOG="$R/blemu-run.log"
EVENTS="$R/events.jsonl"
# The control socket lives on the VM's tmpfs: the results share is 9p.
SOCK=/run/blemu-lab-lifecycle.sock
blemu_pid=

bluez_owned() {
    dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner \
        string:org.bluez | grep -q 'boolean true'
}
bluez_gone() { ! bluez_owned; }
bluez_get() { # OBJECT INTERFACE PROPERTY
    dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" \
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
    /usr/bin/python3 "$here/lifecycle_central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" "$2" \
        > "$R/$1" 2>&1 || fail "the central ($2) failed: $(cat "$R/$1")"
}

step start
export XDG_STATE_HOME="$R/state"
"$B" run "$PROFILE" --adapter "$BLEMU_LAB_PERIPHERAL" --control "$SOCK" --events "$EVENTS" \
    --restore-id "$RESTORE_ID" </dev/null >"$LOG" 2>&1 &
blemu_pid=$!
within 20 "blemu run to advertise (see blemu-run.log)" logged '^advertising "'

step read-1
central central-1.txt read

step restart-bluetoothd
# bluetoothd as the lab stack started it (Sources/Lab/guest-functions.sh): the same command line, read from /proc.
bluetoothd_pid=$(dbus-send --system --print-reply --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.GetConnectionUnixProcessID string:org.bluez | sed -n 's/.*uint32 //p')
[ -n "$bluetoothd_pid" ] || fail "no pid for org.bluez"
tr '\0' ' ' < "/proc/$bluetoothd_pid/cmdline" > "$R/bluetoothd-cmdline.txt"
registered_before=$(count_of 'registered agent, application, advertisement again')
kill -TERM "$bluetoothd_pid"
within 10 "bluetoothd to exit" exited "$bluetoothd_pid"
within 10 "org.bluez to leave the bus" bluez_gone
within 10 "blemu to notice bluetoothd left" logged 'left the bus'
# shellcheck disable=SC2091 # the recorded command line is what runs
$(cat "$R/bluetoothd-cmdline.txt") >"$R/bluetoothd-restarted.log" 2>&1 &
within 20 "org.bluez back on the bus" bluez_owned
within 20 "hci0 powered by the new bluetoothd" powered hci0
within 20 "hci1 powered by the new bluetoothd" powered hci1
within 30 "blemu to register again (see blemu-run.log)" \
    more_than 'registered agent, application, advertisement again' "$registered_before"
within 20 "the advertisement to be active again" advertising

step read-2
central central-2-after-restart.txt read

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
within 20 "blemu to register the advertisement again after power on"     logged 'advertisement registered again after power on'
within 20 "the advertisement to be active after power on" advertising
bluez_get hci0 LEAdvertisingManager1 ActiveInstances > "$R/active-instances-after-power-on.txt" 2>&1

step read-3
central central-3-after-power-cycle.txt read

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
/usr/bin/python3 "$here/lifecycle_central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" hold "$R" \
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
"$B" run "$PROFILE" --adapter "$BLEMU_LAB_PERIPHERAL" --control "$SOCK" --events "$R/events-2.jsonl" \
    --restore-id "$RESTORE_ID" </dev/null >"$LOG" 2>&1 &
blemu_pid=$!
within 20 "the second blemu run to advertise (see blemu-run-2.log)" logged '^advertising "'
device="/org/bluez/$BLEMU_LAB_CENTRAL/dev_$(echo "$BLEMU_LAB_PERIPHERAL_ADDRESS" | tr ':' '_')"
dbus-send --system --print-reply --dest=org.bluez "$device" org.freedesktop.DBus.Properties.Get \
    string:org.bluez.Device1 string:Connected > "$R/hold-connected-after-restart.txt" 2>&1
if poll 10 beat_subscribed ctl-centrals-2.json; then echo yes; else echo no; fi > "$R/resubscribed.txt"
"$B" ctl "$SOCK" set beat 22 > "$R/ctl-set-beat-2.json" 2>&1
if poll 5 holding '^value 22'; then echo yes; else echo no; fi > "$R/value-after-restart.txt"
: > "$R/hold-done"
within 10 "the holding central to finish" exited "$hold_pid"

step stop
stop_blemu "$R/blemu-run-rc"
step 'done'
echo "lifecycle scenario done"
