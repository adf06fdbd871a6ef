#!/bin/sh
# The lab's extended advertising scenario (Tests/LabTests/ExtendedAdvertisingScenario.swift), run inside the VM on
# dual-mode controllers (btvirt without -L emulates a Bluetooth 5.2 controller with LE Extended Advertising; the
# LE-only one is 4.x and has none):
#   lab-extended.sh BLEMU FIXTURES
# `blemu run FIXTURES/lab-extended.yaml` on the peripheral controller either advertises (then the central scans
# with btmgmt, and btmon's capture holds what it received) or exits at once (BlueZ 5.66 refuses the data): its exit
# code goes to blemu-run-rc either way, its output to blemu-run.log.
R="$BLEMU_LAB_RESULTS"
B=$1
F=$2
SCENARIO=extended
# shellcheck source=guest-lib.sh
. "$F/guest-lib.sh"
C="$BLEMU_LAB_CENTRAL"
blemu_pid=

settled() { exited "$blemu_pid" || grep -q '^advertising "' "$R/blemu-run.log"; }

step blemu-run
"$B" run "$F/lab-extended.yaml" --adapter "$BLEMU_LAB_PERIPHERAL" </dev/null >"$R/blemu-run.log" 2>&1 &
blemu_pid=$!
within 30 "blemu run to advertise or exit" settled
if exited "$blemu_pid"; then
    wait "$blemu_pid"
    echo $? > "$R/blemu-run-rc"
    step 'done'
    exit 0
fi

step scan
# The kernel scans with the extended commands on this controller, so the reports are LE Extended Advertising
# Reports, in btmon's capture (btmon.snoop).
timeout 6 btmgmt -i "$C" find -l > "$R/find.txt" 2>&1

step stop
stop_blemu "$R/blemu-run-rc"
step 'done'
echo "extended scenario done"
