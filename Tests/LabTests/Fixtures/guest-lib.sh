# shellcheck shell=sh
# The lab scenarios' shared guest helpers, sourced by each scenario's script inside the VM. A script sets R to the
# results directory before sourcing this, and SCENARIO to its name for `fail`.

# fail REASON: the scenario's failure, in scenario-failure (its tests read it) and on stdout; kills the blemu run the
# script started (blemu_pid, when set) and exits 1. A script with more to stop defines its own after sourcing this.
fail() {
    echo "$*" > "$R/scenario-failure"
    echo "${SCENARIO:-lab} scenario failed: $*"
    [ -n "${blemu_pid:-}" ] && kill -9 "$blemu_pid" 2>/dev/null
    exit 1
}

# step NAME: progress, as `<uptime> NAME` lines in scenario-steps.
step() { echo "$(cut -d' ' -f1 /proc/uptime) $*" >> "$R/scenario-steps"; }

# within SECONDS DESCRIPTION COMMAND [ARGS]: polls every 0.1 s; `fail`s when COMMAND has not succeeded in time.
within() {
    limit=$(($1 * 10)); what=$2; shift 2
    n=0
    until "$@" >/dev/null 2>&1; do
        n=$((n + 1))
        [ "$n" -ge "$limit" ] && fail "gave up after $((limit / 10)) s waiting for $what"
        sleep 0.1
    done
}

# exited PID: a child that exited stays a zombie until waited for, and kill -0 still finds it: read its state.
exited() { [ ! -e "/proc/$1" ] || grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; }

# stop_blemu RC-FILE: SIGTERM to the blemu run the script started (blemu_pid), waits for it to unregister and exit
# (`fail`s after 10 s), and writes its exit code to RC-FILE.
stop_blemu() {
    kill -TERM "$blemu_pid"
    within 10 "blemu run to stop on SIGTERM" exited "$blemu_pid"
    wait "$blemu_pid"
    echo $? > "$1"
}

# forget ADAPTER ADDRESS: bluetoothd keeps a device object (name, UUIDs, GATT cache) per adapter: a scenario drops
# it, so that the next scan starts from nothing. RemoveDevice keeps the cached name (device_remove_stored
# only drops the cache file's services and attributes), and a new device object loads it, after which
# a shortened advertised name never replaces it (adapter.c: only when no name is known): remove the
# file too.
forget() { # ADAPTER ADDRESS
    dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" org.bluez.Adapter1.RemoveDevice \
        "objpath:/org/bluez/$1/dev_$(echo "$2" | tr : _)" >/dev/null 2>&1
    rm -f "/var/lib/bluetooth/$(sed -n "s/^$1 //p" "$R/controllers")/cache/$2"
}
