#!/bin/sh
# SharedAirScenario's command, in the central's VM: the peripherals run in VMs of their own, on another BlueZ, on
# the same RootCanal air. blemu verify --pair --writes reads, writes and subscribes to the thermostat (the last
# peripheral); blemu ctl sets and reads the thermostat through its control socket, which is in its own VM (this
# VM's bridge reaches it); the gateway example holds the two straps at once. Each result goes to a file the tests
# read.
# --pair: without an agent on the central, the pairing bluetoothd starts by itself for the thermostat's guarded
# writes was refused on this air (docs/lab.md, "RootCanal's air").
# Usage: lab-shared-air.sh BLEMU THERMOSTAT_PROFILE PYTHON GATEWAY
R=$BLEMU_LAB_RESULTS
SCENARIO=shared-air
# shellcheck source=guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"
blemu=$1 thermostat=$2 python=$3 gateway=$4
env | grep '^BLEMU_LAB_' | sort > "$R/environment"
step verify
"$blemu" verify --adapter "$BLEMU_LAB_CENTRAL" --pair --writes --listen 3 --json "$thermostat" \
    "${BLEMU_LAB_PERIPHERAL_ADDRESS##*,}" > "$R/verify.json" 2> "$R/verify.err"
echo $? > "$R/verify.rc"
step control
thermostat_control=${BLEMU_LAB_CONTROLS##*,}
# The humidity's schedule is paused first, so the value read back is the one set.
{ "$blemu" ctl "$thermostat_control" schedules pause humidity \
    && "$blemu" ctl "$thermostat_control" set humidity d007 \
    && "$blemu" ctl "$thermostat_control" get humidity; } > "$R/control.json" 2> "$R/control.err"
echo $? > "$R/control.rc"
step gateway
"$python" "$gateway" 2 > "$R/gateway.out" 2>&1
echo $? > "$R/gateway.rc"
step 'done'
