#!/bin/sh
# The doctor scenario (Tests/LabTests/DoctorScenario.swift), run inside the VM: `blemu doctor --json` on a healthy
# adapter, then on a guest broken one way at a time, each put right before the next:
#   lab-doctor.sh BLEMU FIXTURES
# Each run leaves doctor-NAME.json (stdout), doctor-NAME.err and doctor-NAME.rc in the results directory.
R="$BLEMU_LAB_RESULTS"
B=$1
F=$2
SCENARIO=doctor
# shellcheck source=guest-lib.sh
. "$F/guest-lib.sh"
A=hci0

doctor() { # NAME ADAPTER [ARGS...]
    name=$1; adapter=$2; shift 2
    "$B" doctor --adapter "$adapter" --json "$@" > "$R/doctor-$name.json" 2> "$R/doctor-$name.err"
    echo $? > "$R/doctor-$name.rc"
}
powered() { dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" org.freedesktop.DBus.Properties.Get \
    string:org.bluez.Adapter1 string:Powered | grep -q 'boolean true'; }
unpowered() { ! powered "$1"; }
power_on() { btmgmt -i "$1" power on >/dev/null 2>&1; within 10 "$1 powered" powered "$1"; }

step healthy
doctor healthy "$A"

step powered-off
btmgmt -i "$A" power off >/dev/null 2>&1
within 10 "$A off" unpowered "$A"
doctor powered-off "$A" --no-trial
power_on "$A"

step rfkill
switch=
for entry in /sys/class/rfkill/rfkill*; do [ "$(cat "$entry/name" 2>/dev/null)" = "$A" ] && switch=$entry; done
[ -n "$switch" ] || fail "no rfkill switch lists $A"
echo 1 > "$switch/soft"
within 10 "$A off after the soft block" unpowered "$A"
doctor rfkill-blocked "$A" --no-trial
echo 0 > "$switch/soft"
power_on "$A"

step missing
doctor missing hci9 --no-trial

step device-id
# A main.conf as Debian ships it leaves DeviceID unset: bluetoothd then publishes its own Device Information.
grep -v '^DeviceID' "$R/main.conf" > "$R/main-device-id.conf"
doctor device-id "$A" --no-trial --main-conf "$R/main-device-id.conf"

step instances
"$F/hold-advertising-instances" "$A" > "$R/held.txt" 2>&1 &
holder=$!
within 30 "another program to hold every advertising instance" grep -q holding "$R/held.txt"
doctor instances-taken "$A"
kill -TERM "$holder"
within 10 "the holder to let go" exited "$holder"

step not-root
# A user other than root, first under the system's policy (Debian's lets every user send to org.bluez), then under
# one that lets only root and group bluetooth: the policy directory is copied to the VM's memory without the
# default context's allow, mounted over the read-only one and reloaded.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody "$B" doctor --adapter "$A" --json --no-trial > "$R/doctor-not-root.json" 2> "$R/doctor-not-root.err"
echo $? > "$R/doctor-not-root.rc"
mkdir -p /run/doctor-policy
cp -a /etc/dbus-1/system.d/. /run/doctor-policy/
sed -i '/<policy context="default">/,/<\/policy>/d' /run/doctor-policy/bluetooth.conf
mount --bind /run/doctor-policy /etc/dbus-1/system.d || fail "cannot mount the stricter policy"
dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig >/dev/null
as_nobody "$B" doctor --adapter "$A" --json --no-trial > "$R/doctor-not-root-refused.json" \
    2> "$R/doctor-not-root-refused.err"
echo $? > "$R/doctor-not-root-refused.rc"
umount /etc/dbus-1/system.d
dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig >/dev/null

step bluetoothd-stopped
# Last: the stack's power-off copes with a bluetoothd that is already gone.
# shellcheck disable=SC2046 # one argument per pid
kill -TERM $(pidof bluetoothd)
gone() { ! dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.GetNameOwner \
    string:org.bluez >/dev/null 2>&1; }
within 10 "org.bluez to leave the bus" gone
doctor bluetoothd-stopped "$A"
step 'done'
echo "doctor scenario done"
