#!/bin/sh
# The pairing scenario's guest script (PairingScenario.swift), run in the VM by `blemu lab run`:
#   lab-pairing.sh BLEMU SECURE_PROFILE PASSKEY WRONG_PASSKEY DISPLAY_PROFILE
# Serves SECURE_PROFILE (a keyboard-only device with a fixed passkey) on the peripheral controller; a keyboard-only
# central with an agent of its own (pairing_central.py) pairs typing WRONG_PASSKEY, then PASSKEY, and reads and
# writes what needs an authenticated link. Then serves DISPLAY_PROFILE (display-only) and the central types the
# passkey blemu displayed, read from `blemu ctl pairing`. Evidence goes to the results directory; a failed step
# writes `scenario-failure` and exits 1.
R="$BLEMU_LAB_RESULTS"
here=$(dirname "$0")
SCENARIO=pairing
# shellcheck source=guest-lib.sh
. "$here/guest-lib.sh"
B=$1 SECURE=$2 PASSKEY=$3 WRONG=$4 DISPLAY=$5
# The control socket lives on the VM's tmpfs: the results share is 9p.
SOCK=/run/blemu-lab-pairing.sock
EMAIL=00002a87-0000-1000-8000-00805f9b34fb
STATUS=5a1c0b7e-3d2f-4e61-9c8b-7a6d5e4f3a2b
CODE=8d3a2002-6b1e-4c2f-9a57-3e2c1d0b4f61
blemu_pid=

advertising() { grep -q '^advertising "' "$R/$1-run.log"; }
serve() { # NAME PROFILE
    "$B" run "$2" --adapter "$BLEMU_LAB_PERIPHERAL" --control "$SOCK" --events "$R/$1-events.jsonl" \
        </dev/null >"$R/$1-run.log" 2>&1 &
    blemu_pid=$!
    within 20 "blemu run $1 to advertise (see $1-run.log)" advertising "$1"
}
stop() {
    kill -TERM "$blemu_pid"
    within 10 "blemu run to stop on SIGTERM" exited "$blemu_pid"
    wait "$blemu_pid"
    blemu_pid=
}
central() { # RESULT PASSKEY READ_UUID [WRITE_UUID TEXT]
    result=$1; shift
    /usr/bin/python3 "$here/pairing_central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" "$@" \
        > "$R/$result.json" 2> "$R/$result.err" || fail "the central ($result) failed: $(cat "$R/$result.err")"
    "$B" ctl "$SOCK" pairing > "$R/$result-ctl.json" 2>&1
}

step wrong-passkey
serve secure "$SECURE"
central wrong-passkey "$WRONG" "$EMAIL"

step right-passkey
central right-passkey "$PASSKEY" "$EMAIL" "$STATUS" Busy
"$B" ctl "$SOCK" get status > "$R/status-after-write.json" 2>&1
stop

step forget-bond
# bluetoothd keeps the peripheral's side of story 1's bond after blemu stops, and on the next connection it raises
# the link's security with that key (device_attach_att: "Elevating security") before the central has paired:
# the new device must not know the central, as a freshly reset lock would not.
bond="/org/bluez/$BLEMU_LAB_PERIPHERAL/dev_$(echo "$BLEMU_LAB_CENTRAL_ADDRESS" | tr ':' '_')"
dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$BLEMU_LAB_PERIPHERAL" \
    org.bluez.Adapter1.RemoveDevice "objpath:$bond" > "$R/forget-bond.txt" 2>&1 \
    || fail "RemoveDevice $bond on the peripheral's side: $(cat "$R/forget-bond.txt")"

step displayed-passkey
serve display "$DISPLAY"
central displayed-passkey "ctl:$B:$SOCK" "$CODE"
stop
