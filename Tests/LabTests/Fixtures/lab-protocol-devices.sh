#!/bin/sh
# The protocol devices' command (ProtocolDevicesScenario.swift), run in the VM by `blemu lab run` while the lab stack
# serves profiles/indoor-bike.yaml and profiles/glucose-meter.yaml, each on a peripheral controller of its own:
#   lab-protocol-devices.sh PYTHON NAME=CENTRAL...
# Runs each central (a python script that finds its device by name) in turn, writing NAME.txt and NAME-rc into the
# results directory; exits 0 once every one has run, whatever they said (the tests read the files).
R="$BLEMU_LAB_RESULTS"
PYTHON=$1
shift
for pair in "$@"; do
    name=${pair%%=*}
    "$PYTHON" "${pair#*=}" > "$R/$name.txt" 2>&1
    echo $? > "$R/$name-rc"
done
exit 0
