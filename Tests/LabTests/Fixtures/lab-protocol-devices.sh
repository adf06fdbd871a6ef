#!/bin/sh
# The protocol devices' command (ProtocolDevicesScenario.swift), run in the VM by `blemu lab run` while the lab stack
# serves the protocol devices' profiles, each on a peripheral controller of its own:
#   lab-protocol-devices.sh PYTHON BLEMU VERIFIED PROFILE DEFECT NAME=CENTRAL...
# First `blemu verify --writes` makes PROFILE's declared exchanges against the device the NAME VERIFIED stands for
# (VERIFIED.verify.json, VERIFIED.verify-rc), then again with DEFECT (a handler script given the device's control
# socket, which prints `attached` once it answers) planting one wrong answer (VERIFIED.defect.json,
# VERIFIED.defect-rc): before the centrals, whose sessions change the devices' state. Between the two the device is
# reset (the exchanges changed its values) and the central's bluetoothd forgets it (it learned the GAP name, which
# verify would take for the advertised one). Then each central (a python
# script that finds its device by name) in turn, writing NAME.txt and NAME-rc into the results directory; exits 0
# once every one has run, whatever they said (the tests read the files).
R="$BLEMU_LAB_RESULTS"
SCENARIO=protocol-devices
# shellcheck source=guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"
PYTHON=$1
BLEMU=$2
VERIFIED=$3
PROFILE=$4
DEFECT=$5
shift 5
index=0
found=
for pair in "$@"; do
    index=$((index + 1))
    if [ "${pair%%=*}" = "$VERIFIED" ]; then found=1; break; fi
done
[ -n "$found" ] || fail "no device is called $VERIFIED"

address=$(echo "$BLEMU_LAB_PERIPHERAL_ADDRESS" | cut -d, -f"$index")
control=$(echo "$BLEMU_LAB_CONTROLS" | cut -d, -f"$index")
verify() { # OUTPUT
    "$BLEMU" verify "$PROFILE" "$address" --adapter "$BLEMU_LAB_CENTRAL" --timeout 30 --listen 0 --writes --json \
        > "$R/$VERIFIED.$1.json" 2> "$R/$VERIFIED.$1.err"
    echo $? > "$R/$VERIFIED.$1-rc"
}
verify verify
"$BLEMU" ctl "$control" reset > /dev/null
forget "$BLEMU_LAB_CENTRAL" "$address"
"$PYTHON" "$DEFECT" "$control" > "$R/$VERIFIED.defect.out" 2>&1 &
defect=$!
# A handler that never attaches leaves no defect.json: the test says so, and the centrals still run.
tries=0
until grep -q '^attached' "$R/$VERIFIED.defect.out" || exited "$defect" || [ "$tries" -ge 100 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
grep -q '^attached' "$R/$VERIFIED.defect.out" && verify defect
kill "$defect" 2>/dev/null
wait "$defect" 2>/dev/null
for pair in "$@"; do
    name=${pair%%=*}
    "$PYTHON" "${pair#*=}" > "$R/$name.txt" 2>&1
    echo $? > "$R/$name-rc"
done
exit 0
