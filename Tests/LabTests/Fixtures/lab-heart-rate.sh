#!/bin/sh
# The heart-rate scenario's command (HeartRateScenario.swift), run in the VM by `blemu lab run` while the lab
# stack serves profiles/heart-rate.yaml on the peripheral controller:
#   lab-heart-rate.sh BLEMU NAME LISTEN_SECONDS WRITABLE_CHECK CENTRAL_TESTS BLEAK_PYTHON BLEAK_TESTS
# Probes the strap by name and service as well as address (the device only matches once the scan response, with
# the name, and the advertising data, with the UUIDs, have both been seen, so the report's scan fields are
# complete); then writes WRITABLE_CHECK in the working directory (writable through the lab's overlay: the file
# lands in results/workdir, never in the checkout); then runs the README's worked example, the central-side suite
# a user would run against the same strap, and its bleak twin. Exits with the probe's code.
R="$BLEMU_LAB_RESULTS"
B=$1 NAME=$2 LISTEN=$3 WRITABLE=$4 CENTRAL_TESTS=$5 BLEAK_PYTHON=$6 BLEAK_TESTS=$7
"$B" probe --adapter "$BLEMU_LAB_CENTRAL" --name "$NAME" --service 180D --listen "$LISTEN" --timeout 20 \
    --json "$BLEMU_LAB_PERIPHERAL_ADDRESS" > "$R/probe.json"
rc=$?
echo "written in the lab" > "$WRITABLE" || echo "read-only" > "$R/workdir-failed"
/usr/bin/python3 "$CENTRAL_TESTS" > "$R/central-tests.txt" 2>&1
echo $? > "$R/central-tests-rc"
"$BLEAK_PYTHON" "$BLEAK_TESTS" > "$R/bleak-tests.txt" 2>&1
echo $? > "$R/bleak-tests-rc"
exit $rc
