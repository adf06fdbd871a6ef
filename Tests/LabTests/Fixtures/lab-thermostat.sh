#!/bin/sh
# The thermostat scenario's guest script (ThermostatScenario.swift), run in the VM by `blemu lab run`:
#   lab-thermostat.sh BLEMU PROFILE RESTORE_ID LISTEN_SECONDS WRITTEN_SET_POINT TEMPERATURE...
# Story 1: serves PROFILE, `blemu probe --listen LISTEN_SECONDS` subscribes to the temperature from the central
# controller, and each TEMPERATURE (centidegrees) is set through `blemu ctl`. Story 2: thermostat_central.py writes
# WRITTEN_SET_POINT (hex), blemu is killed with SIGKILL and started again with the same RESTORE_ID, and the central
# reads the set point back. Evidence goes to the results directory; a failed step writes `scenario-failure` and
# exits 1.
R="$BLEMU_LAB_RESULTS"
here=$(dirname "$0")
SCENARIO=thermostat
# shellcheck source=guest-lib.sh
. "$here/guest-lib.sh"
B=$1 PROFILE=$2 RESTORE_ID=$3 LISTEN=$4 WRITTEN=$5
shift 5
# The control socket lives on the VM's tmpfs: the results share is 9p, where a socket's inode is not
# the one connect() finds.
SOCK=/run/blemu-lab-thermostat.sock
export XDG_STATE_HOME="$R/state"
STATE="$XDG_STATE_HOME/blemu/$RESTORE_ID.json"
blemu_pid=

start_blemu() { # LOG EVENTS
    "$B" run "$PROFILE" --adapter "$BLEMU_LAB_PERIPHERAL" --control "$SOCK" --events "$2" \
        --restore-id "$RESTORE_ID" </dev/null >"$1" 2>&1 &
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
( "$B" probe --adapter "$BLEMU_LAB_CENTRAL" --service 181A --listen "$LISTEN" --timeout 20 --json \
    "$BLEMU_LAB_PERIPHERAL_ADDRESS" > "$R/probe.json" 2> "$R/probe.err"; echo $? > "$R/probe-rc" ) &
within 40 "the probe to subscribe to temperature (blemu ctl centrals)" subscribed_to_temperature

step ctl-set
i=0
for value in "$@"; do
    i=$((i + 1))
    "$B" ctl "$SOCK" set temperature --field centidegrees=$value > "$R/ctl-set-$i.json" 2>&1 \
        || fail "blemu ctl set temperature $value failed: $(cat "$R/ctl-set-$i.json")"
    sleep 0.3
done
"$B" ctl "$SOCK" counters > "$R/ctl-counters.json" 2>&1
echo $? > "$R/ctl-counters-rc"
within 30 "the probe to finish listening" test -s "$R/probe-rc"

step write
/usr/bin/python3 "$here/thermostat_central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" write \
    "$WRITTEN" > "$R/central-write.txt" 2>&1 || fail "the writing central failed: $(cat "$R/central-write.txt")"
within 5 "the state file $STATE to hold the written set point" grep -q "$WRITTEN" "$STATE"
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
/usr/bin/python3 "$here/thermostat_central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" read \
    > "$R/central-read.txt" 2>&1 || fail "the reading central failed: $(cat "$R/central-read.txt")"

step stop
stop_blemu "$R/blemu-run-2-rc"
step 'done'
echo "thermostat scenario done"
