#!/bin/sh
# The clone scenario (Tests/LabTests/CloneScenario.swift), run inside the VM:
#   lab-clone.sh BLEMU DROP-PROFILE VERIFY-PROFILE VERIFY-VARIANT FIRMWARE FIRMWARE-PROFILE PROFILE[|RECORD[|PASSKEY]]...
# For each profile: `blemu run PROFILE` on the peripheral controller, `blemu clone` from the central's (the profile
# and the probe report it was made from; with RECORD, `--record RECORD` too, and the clone's probe listens as
# long; with PASSKEY, `--pair --passkey PASSKEY`), then `blemu run` of the clone and `blemu probe --json` of it.
# Files per profile NAME: NAME.clone.yaml, NAME.original.json, NAME.clone.json, NAME.clone-rc, NAME.probe-rc, the
# clone's event log NAME.clone-events.jsonl and the logs. Each profile is a story in a subshell: a failed step
# writes NAME.failure and the next profile still runs. Then the bad cases, with DROP-PROFILE served (it drops the
# link during the reads): `blemu clone` of it (drop.clone-rc, drop.clone.out, drop.original.json; drop.clone.yaml
# must not appear), and of an address nobody has (missing.*).
# While VERIFY-PROFILE is served, `blemu verify --writes` checks the live device against it (NAME.verify.json,
# NAME.verify.xml, NAME.verify-rc) and against VERIFY-VARIANT, the same profile with promises changed
# (NAME.variant.json, NAME.variant-rc). A profile cloned with PASSKEY is verified with its writes over the paired
# link once cloned (NAME.verify-paired.json, NAME.verify-paired-rc).
# Then FIRMWARE, a device with defects of its own (an encrypted write left open among them), is served and verified
# unpaired with --writes against FIRMWARE-PROFILE, the profile it should meet (firmware.json, firmware-rc,
# firmware.failure).
# Progress goes to scenario-steps.
R="$BLEMU_LAB_RESULTS"
B=$1
DROP=$2
VERIFY=$3
VARIANT=$4
FIRMWARE=$5
FIRMWARE_PROFILE=$6
shift 6
F=$(dirname "$0")
SCENARIO=clone
# shellcheck source=guest-lib.sh
. "$F/guest-lib.sh"
C="$BLEMU_LAB_CENTRAL"
ADDR="$BLEMU_LAB_PERIPHERAL_ADDRESS"
blemu_pid=

advertising() { # LOG
    exited "$blemu_pid" && fail "blemu run exited before advertising (see $1)"
    grep -q '^advertising "' "$1"
}
serve() { # PROFILE LOG [blemu run OPTION...]
    served_profile=$1
    served_log=$2
    shift 2
    "$B" run "$served_profile" --adapter "$BLEMU_LAB_PERIPHERAL" "$@" </dev/null >"$served_log" 2>&1 &
    blemu_pid=$!
    within 20 "blemu run $served_profile to advertise" advertising "$served_log"
}
# stop RC-FILE: stop_blemu, then forget the device on the central, so the next probe resolves from nothing, and
# the central on the peripheral's adapter: a bond the peripheral kept (secure.yaml is cloned after pairing) makes
# bluetoothd send a Security Request on the next connection (5.66 src/device.c device_attach_att: "Elevating
# security level since LTK is available"), which the central, having forgotten its key, answers with a pairing of
# its own that fails and drops the link.
stop() {
    stop_blemu "$1"
    blemu_pid=
    forget "$C" "$ADDR"
    forget "$BLEMU_LAB_PERIPHERAL" "$(sed -n "s/^$C //p" "$R/controllers")"
}

clone_one() { # NAME PROFILE [RECORD [PASSKEY]]
    current=$1
    record=${3:-}
    passkey=${4:-}
    listen=0
    [ -n "$record" ] && listen=${record%s}
    fail() {
        echo "$*" > "$R/$current.failure"
        [ -n "$blemu_pid" ] && kill -9 "$blemu_pid" 2>/dev/null
        exit 1
    }
    serve "$2" "$R/$1.original-run.log"
    "$B" clone --adapter "$C" --timeout 20 -o "$R/$1.clone.yaml" --probe-json "$R/$1.original.json" \
        ${record:+--record "$record"} ${passkey:+--pair --passkey "$passkey"} "$ADDR" > "$R/$1.clone.out" 2>&1
    echo $? > "$R/$1.clone-rc"
    if [ "$2" = "$VERIFY" ]; then
        "$B" verify "$2" "$ADDR" --adapter "$C" --timeout 20 --listen 6s --writes --json \
            --junit "$R/$1.verify.xml" > "$R/$1.verify.json" 2> "$R/$1.verify.err"
        echo $? > "$R/$1.verify-rc"
        "$B" verify "$VARIANT" "$ADDR" --adapter "$C" --timeout 20 --listen 2s --writes --json \
            > "$R/$1.variant.json" 2> "$R/$1.variant.err"
        echo $? > "$R/$1.variant-rc"
    fi
    if [ -n "$passkey" ]; then
        # Both sides forget the clone's bond first, so verify pairs from nothing as the clone did: reconnecting to
        # the bonded device makes bluetoothd raise the link's security (see stop), and on kernel 6.1 under btvirt
        # that path once failed the pairing and oopsed the kernel as the link's socket closed (hci_chan_del).
        forget "$C" "$ADDR"
        forget "$BLEMU_LAB_PERIPHERAL" "$(sed -n "s/^$C //p" "$R/controllers")"
        "$B" verify "$2" "$ADDR" --adapter "$C" --timeout 20 --listen 0 --pair --passkey "$passkey" --writes \
            --json > "$R/$1.verify-paired.json" 2> "$R/$1.verify-paired.err"
        echo $? > "$R/$1.verify-paired-rc"
    fi
    stop "$R/$1.original-run-rc"
    [ -f "$R/$1.clone.yaml" ] || fail "blemu clone wrote no profile: $(tail -3 "$R/$1.clone.out")"
    # The clone's event log says when it sent each value on its own clock: the pace it keeps, apart from what the
    # lab's scheduling adds on the way to the central.
    serve "$R/$1.clone.yaml" "$R/$1.clone-run.log" --events "$R/$1.clone-events.jsonl"
    "$B" probe --adapter "$C" --listen "$listen" --timeout 20 --json "$ADDR" > "$R/$1.clone.json" 2> "$R/$1.probe.err"
    echo $? > "$R/$1.probe-rc"
    stop "$R/$1.clone-run-rc"
}

for argument in "$@"; do
    IFS='|' read -r profile record passkey <<EOF_ARGUMENT
$argument
EOF_ARGUMENT
    name=$(basename "$profile" .yaml)
    step "$name"
    ( clone_one "$name" "$profile" "$record" "$passkey" )
done

step firmware
(
    current=firmware
    fail() {
        echo "$*" > "$R/firmware.failure"
        [ -n "$blemu_pid" ] && kill -9 "$blemu_pid" 2>/dev/null
        exit 1
    }
    serve "$FIRMWARE" "$R/firmware.run.log"
    "$B" verify "$FIRMWARE_PROFILE" "$ADDR" --adapter "$C" --timeout 20 --listen 0 --writes --json \
        > "$R/firmware.json" 2> "$R/firmware.err"
    echo $? > "$R/firmware-rc"
    # A guarded write the device refused may have made the central's bluetoothd pair by itself: stop forgets both
    # sides' bonds, so the drop below connects as before.
    stop "$R/firmware.run-rc"
)

step drop
(
    current=drop
    echo "$ADDR" > "$R/peripheral-address"
    serve "$DROP" "$R/drop.run.log"
    # An address nobody has first, while LabDrop is what the adapter sees: the drop below leaves bluetoothd with a
    # read pending on a link that is gone, which crashes it a little later (docs/bluez.md, "Requests answered late").
    # 20 s: one CI run's central saw no advertisement at all in its first 10 s of discovery (BlueZ 5.82, beside
    # another suite's VM), though the drop below found LabDrop right after.
    "$B" clone --adapter "$C" --timeout 20 -o "$R/missing.clone.yaml" 00:AA:01:00:00:99 > "$R/missing.clone.out" 2>&1
    echo $? > "$R/missing.clone-rc"
    forget "$C" "$ADDR"
    "$B" clone --adapter "$C" --timeout 20 -o "$R/drop.clone.yaml" --probe-json "$R/drop.original.json" "$ADDR" \
        > "$R/drop.clone.out" 2>&1
    echo $? > "$R/drop.clone-rc"
    stop "$R/drop.run-rc"
)
step 'done'
echo "clone scenario done"
