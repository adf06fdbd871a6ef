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
