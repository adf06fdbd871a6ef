#!/bin/sh
# LinkedAirsScenario's commands, one per host (each a network namespace, each its own `blemu lab run` and air).
#   lab-linked-air.sh listen
#       The listening host, serving the thermostat: holds its VM up until the test writes linked-done into its
#       results directory (the work share, which sees the host's new files), at most 10 minutes.
#   lab-linked-air.sh link BLEMU PROFILE ADDRESS
#       The linking host, with only a central: blemu verify --pair --writes reads, writes and subscribes to the
#       peripheral at ADDRESS, on the other host's air. --pair: without an agent on the central, the pairing
#       bluetoothd starts by itself for the guarded writes was refused on RootCanal (docs/lab.md).
R=$BLEMU_LAB_RESULTS
case "$1" in
listen)
    i=0
    while [ ! -e "$R/linked-done" ]; do
        i=$((i + 1))
        [ "$i" -gt 600 ] && exit 1
        sleep 1
    done
    ;;
link)
    env | grep '^BLEMU_LAB_' | sort > "$R/environment"
    "$2" verify --adapter "$BLEMU_LAB_CENTRAL" --pair --writes --listen 3 --timeout 90 --json "$3" "$4" \
        > "$R/verify.json" 2> "$R/verify.err"
    echo $? > "$R/verify.rc"
    ;;
esac
