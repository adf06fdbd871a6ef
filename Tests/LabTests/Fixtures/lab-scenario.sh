#!/bin/sh
# The lab scenario's command (LabScenario.swift), run in the VM by `blemu lab run`:
#   lab-scenario.sh BLEMU PROBE_LISTEN_SECONDS EXIT_CODE
# Records the environment and bluetoothd's view, runs `blemu probe` and discover_central.py against the
# peripheral, and exits EXIT_CODE to prove the code is propagated.
R="$BLEMU_LAB_RESULTS"
here=$(dirname "$0")
B=$1 LISTEN=$2 CODE=$3
env | grep '^BLEMU_LAB' | sort > "$R/env.txt"
dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects \
    > "$R/objects.txt" 2>&1
pid=$(dbus-send --system --print-reply --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.GetConnectionUnixProcessID string:org.bluez | sed -n 's/.*uint32 //p')
echo "org.bluez $(cat /proc/$pid/comm)" > "$R/owner.txt"
# blemu probe first, while the peripheral is fresh: it must discover it, not find it already connected.
if [ -x "$B" ]; then
    "$B" probe --adapter "$BLEMU_LAB_CENTRAL" --listen "$LISTEN" \
        --timeout 15 --json "$BLEMU_LAB_PERIPHERAL_ADDRESS" > "$R/probe.json" 2> "$R/probe.err"
    echo $? > "$R/probe-rc"
else
    echo "no blemu at $B" > "$R/probe.err"
fi
# The probe connected, so the central's bluetoothd knows the peripheral by the GAP name it read over GATT (the
# stand-in sets none: the adapter's default, "BlueZ 5.82"), which an advertised name never replaces (adapter.c keeps
# a known name). Forgotten, device and cache, so the python central scans as a first-time central does.
dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$BLEMU_LAB_CENTRAL" org.bluez.Adapter1.RemoveDevice \
    "objpath:/org/bluez/$BLEMU_LAB_CENTRAL/dev_$(echo "$BLEMU_LAB_PERIPHERAL_ADDRESS" | tr : _)" >/dev/null 2>&1
rm -f "/var/lib/bluetooth/$BLEMU_LAB_CENTRAL_ADDRESS/cache/$BLEMU_LAB_PERIPHERAL_ADDRESS"
/usr/bin/python3 "$here/discover_central.py" "$BLEMU_LAB_CENTRAL" "$BLEMU_LAB_PERIPHERAL_ADDRESS" > "$R/central.txt" 2>&1
echo "central exited $?" >> "$R/central.txt"
echo "scenario done, exiting $CODE"
exit "$CODE"
