# shellcheck shell=sh disable=SC2154
# The lab's guest stack (docs/lab.md), stage 2's functions: sourced by the script GuestStack.swift generates for a
# run (guest-stack.sh, PID 1 on the host's root), which sets before sourcing:
#   W                the results directory, shared with the host
#   STEP_SECONDS     how long one wait_for may wait
#   CONTROLLERS      how many controllers the radio makes
#   RADIO_KIND       btvirt, or rootcanal (its controllers are serial ports)
#   RADIO            btvirt's path, and RADIO_ARGUMENTS its arguments (-L: LE only)
#   BLUETOOTHD       the bluetoothd to start, and to name in gdb's backtrace of its core
#   BUSYBOX          static busybox, for `poweroff -f` (the host's own poweroff talks to systemd)
# Every wait is bounded. A step that fails or times out writes `lab-failure` (the step's name, then the reason) and
# powers off; LabMachine turns that into LabError.stepFailed. The names of the files written into $W are
# GuestStack.File's (a test holds them to it).

STEP=start
peripheral_pids=
bt_class=/sys/class/bluetooth

step() {
    STEP=$1
    echo "$(cut -d' ' -f1 /proc/uptime) $1" >> "$W/steps"
    echo "blemu-lab: step $1 at $(cut -d' ' -f1 /proc/uptime)s"
}
power_off() {
    # Peripherals first, so they unregister their advertisements; then the daemons; btmon last so it
    # records the rest. Each wait is bounded: a stuck process must not keep the VM up.
    for p in $peripheral_pids; do kill -TERM "$p" 2>/dev/null; done
    for i in $(seq 30); do
        alive=
        for p in $peripheral_pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ -z "$alive" ] && break
        sleep 0.1
    done
    # After a failed step bluetoothd is left as it was, so its log ends where the step hung.
    [ "$1" != failed ] && [ -n "$bluetoothd_pid" ] && kill -TERM "$bluetoothd_pid" 2>/dev/null && sleep 0.2
    # Both btmons (one may have crashed): the capture's last records are flushed on SIGINT.
    kill -INT $btmon_pid $btsnoop_pid 2>/dev/null; sleep 0.3
    # A process that crashed left its core in /run/blemu-cores: name each, and let gdb (when the host
    # has it) say where bluetoothd died, since its log just stops.
    for core in /run/blemu-cores/core.*; do
        [ -e "$core" ] || continue
        echo "${core##*/}" >> "$W/cores"
        case "${core##*/}" in
            core.bluetoothd.*)
                command -v gdb >/dev/null && timeout 60 gdb -batch -ex "thread apply all bt" \
                    "$BLUETOOTHD" "$core" >> "$W/bluetoothd-backtrace.txt" 2>&1 ;;
        esac
    done
    sync
    "$BUSYBOX" poweroff -f
    sleep 10
}
die() {
    echo "blemu-lab: step $STEP failed: $*"
    printf '%s\n%s\n' "$STEP" "$*" > "$W/lab-failure"
    power_off failed
}
# wait_for DESCRIPTION COMMAND [ARGS]: polls every 0.1 s, gives up after the step timeout. The clock is the
# VM's uptime, not a count of polls: under TCG one poll (a dbus-send) can take half a second, and a count
# of 0.1 s sleeps once stretched 60 s into the VM's whole 300. The kernel's last Bluetooth failure, if
# any (a controller whose HCI Reset timed out never reaches bluetoothd), goes into the message.
uptime_seconds() { cut -d. -f1 /proc/uptime; }
wait_for() {
    what=$1; shift
    deadline=$(( $(uptime_seconds) + STEP_SECONDS ))
    until "$@" >/dev/null 2>&1; do
        if [ "$(uptime_seconds)" -ge "$deadline" ]; then
            kernel=$(dmesg 2>/dev/null | grep 'Bluetooth: .*failed' | tail -1 | sed 's/^[[][^]]*] //')
            die "gave up after $STEP_SECONDS s waiting for $what${kernel:+ (kernel: $kernel)}"
        fi
        sleep 0.1
    done
}
network_interface() { # the first that is not loopback
    for entry in /sys/class/net/*; do
        [ -e "$entry" ] && [ "${entry##*/}" != lo ] && echo "${entry##*/}" && return 0
    done
    return 1
}
bring_up_network() { # ADDRESS: qemu's user-mode network on the VM's one NIC (ControlBridge.swift)
    modprobe virtio_net || die "modprobe virtio_net failed"
    wait_for "a network interface" network_interface
    nic=$(network_interface)
    { ip link set lo up && ip addr add "$1/24" dev "$nic" && ip link set "$nic" up; } \
        || die "cannot bring up $nic with $1"
}
# The radio: btvirt's controllers, ready once mgmt lists them all. btvirt reads no controller until it
# has created all of them, and on cold caches that took longer than the 2 s the kernel waits for the
# first one's HCI Reset (docs/ci.md, "5. In CI"). The kernel then leaves that controller out of mgmt's
# index list for good (net/bluetooth/mgmt.c read_index_list skips HCI_SETUP), and bluetoothd never hears
# of it: the radio is started again, once.
start_radio() {
    # shellcheck disable=SC2086 # the arguments are words
    "$RADIO" $RADIO_ARGUMENTS >>"$W/btvirt.log" 2>&1 &
    radio_pid=$!
}
all_controllers_present() {
    for i in $(seq 0 $((CONTROLLERS - 1))); do [ -e "$bt_class/hci$i" ] || return 1; done
}
no_controllers() {
    for entry in "$bt_class"/hci*; do [ -e "$entry" ] && return 1; done
    return 0
}
# Bounded: 5.82's btmgmt never returns from non-interactive mode (docs/bluez.md), though it prints first.
# Its standard input stays the console's: at end of input (</dev/null) it quits before the answer comes.
all_controllers_ready() {
    timeout --foreground 5 btmgmt info 2>/dev/null | grep -q "^Index list with $CONTROLLERS item"
}
setup_failure_lines() { dmesg 2>/dev/null | grep 'Bluetooth: hci[0-9]*: Opcode 0x[0-9a-f]* failed'; }
setup_failures() { setup_failure_lines | grep -c .; }
radio_settled() { all_controllers_ready || [ "$(setup_failures)" -gt "$failures_before" ]; }
bring_up_btvirt() {
    : >"$W/btvirt.log"
    failures_before=$(setup_failures)
    start_radio
    wait_for "$CONTROLLERS controllers in $bt_class" all_controllers_present
    wait_for "mgmt to list $CONTROLLERS controllers" radio_settled
    if ! all_controllers_ready && ! { sleep 2; all_controllers_ready; }; then
        # Once: a radio that fails twice is a problem to report, not to hide.
        step radio-again
        echo "blemu-lab: a controller's set-up failed ($(setup_failure_lines | tail -1 \
            | sed 's/^[[][^]]*] //')); starting the radio again"
        kill -9 "$radio_pid"
        wait_for "the failed controllers to go" no_controllers
        start_radio
        wait_for "$CONTROLLERS controllers in $bt_class" all_controllers_present
    fi
    wait_for "mgmt to list $CONTROLLERS controllers" all_controllers_ready
}
# The radio on RootCanal's air: its controllers are the VM's PCI serial ports (ttyS4 and up, in the order qemu got
# them: QEMUCommand.serialControllers), each attached with btattach, one at a time, each listed by mgmt before the
# next so that hciN is port N.
# The PCI serial ports in order, read once: one `ls` rather than a readlink per port (32 of them), which
# under TCG cost 5 s a controller.
pci_ttys() { ls -l /sys/class/tty/ | sed -n 's|.* \(ttyS[0-9]*\) -> .*/pci.*|\1|p' | sort -V; }
# Bounded: 5.82's btmgmt never returns from non-interactive mode (docs/bluez.md), though it prints first.
controllers_listed() { timeout --foreground 5 btmgmt info 2>/dev/null | grep -q "^Index list with $1 item"; }
bring_up_rootcanal() {
    : >"$W/btattach.log"
    modprobe hci_uart || die "modprobe hci_uart failed"
    ttys=$(pci_ttys)
    for i in $(seq 0 $((CONTROLLERS - 1))); do
        tty=$(echo "$ttys" | sed -n "$((i + 1))p")
        [ -n "$tty" ] || die "no serial port for controller $i: the kernel registered too few"
        echo "hci$i: /dev/$tty" >>"$W/btattach.log"
        btattach -B "/dev/$tty" -P h4 >>"$W/btattach.log" 2>&1 &
        wait_for "hci$i on /dev/$tty (see btattach.log, radio.log)" test -e "$bt_class/hci$i"
        wait_for "mgmt to list $((i + 1)) controllers" controllers_listed $((i + 1))
    done
}
bluez_get() { # OBJECT INTERFACE PROPERTY
    dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" \
        org.freedesktop.DBus.Properties.Get "string:org.bluez.$2" "string:$3"
}
all_adapters_on_bus() {
    # NameHasOwner first: a call to org.bluez before bluetoothd owns it asks dbus-daemon to activate it.
    dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner \
        string:org.bluez | grep -q 'boolean true' || return 1
    out=$(dbus-send --system --print-reply --dest=org.bluez / \
        org.freedesktop.DBus.ObjectManager.GetManagedObjects) || return 1
    for i in $(seq 0 $((CONTROLLERS - 1))); do
        echo "$out" | grep -q "object path \"/org/bluez/hci$i\"" || return 1
    done
}
powered() { bluez_get "$1" Adapter1 Powered | grep -q 'boolean true'; }
address_of() { bluez_get "$1" Adapter1 Address | sed -n 's/.*string "\(.*\)".*/\1/p'; }
# process_alive PID: true while PID runs. `kill -0` is not enough: a child that exited stays a zombie of PID 1 (the
# stage 2 script) until reaped, and `kill -0` succeeds on zombies, so a dead peripheral would be waited for until the
# step timeout. The state letter in /proc/PID/stat is `Z` for a zombie.
process_alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
advertising_alive() { # CONTROLLER PID: fails fast when the peripheral died
    process_alive "$2" || die "blemu run on $1 exited before advertising (see blemu-$1.log)"
    bluez_get "$1" LEAdvertisingManager1 ActiveInstances | grep -q 'byte [1-9]'
}
# addresses CONTROLLER...: their addresses from `controllers`, comma-separated.
addresses() { for c in "$@"; do sed -n "s/^$c //p" "$W/controllers"; done | paste -sd, -; }

# The stack, step by step: kernel modules, btmon, the system bus, the radio, bluetoothd, every adapter powered, and
# the controllers' addresses in `controllers`.
bring_up_stack() {
    step kernel-modules
    uname -r >"$W/kernel-release"
    # Cores stay in the VM's memory, named by program and pid, for power_off to read.
    mkdir -p /run/blemu-cores
    echo "/run/blemu-cores/core.%e.%p" > /proc/sys/kernel/core_pattern
    # shellcheck disable=SC3045 # dash, the guest's /bin/sh (the host's), has it
    ulimit -c unlimited
    mkdir -p /dev/pts /dev/shm
    mount -t devpts devpts /dev/pts
    mount -t tmpfs tmpfs /dev/shm
    modprobe hci_vhci || die "modprobe hci_vhci failed"
    wait_for "/dev/vhci" test -e /dev/vhci

    step btmon
    # The binary capture is the whole trace; the text one is for reading, and 5.66's decoder can crash on
    # some traffic, ending it early.
    btmon -w "$W/btmon.snoop" >/dev/null 2>&1 &
    btsnoop_pid=$!
    stdbuf -oL btmon -t >"$W/btmon.txt" 2>&1 &
    btmon_pid=$!

    step dbus
    mkdir -p /run/dbus
    dbus-daemon --system --nofork --nopidfile --nosyslog >"$W/dbus-daemon.log" 2>&1 &
    wait_for "the system bus socket /run/dbus/system_bus_socket" test -S /run/dbus/system_bus_socket

    step controllers
    if [ "$RADIO_KIND" = rootcanal ]; then bring_up_rootcanal; else bring_up_btvirt; fi

    step bluetoothd
    "$BLUETOOTHD" -n -d -P battery -f "$W/main.conf" >"$W/bluetoothd.log" 2>&1 &
    bluetoothd_pid=$!
    wait_for "org.bluez on the system bus with $CONTROLLERS adapters" all_adapters_on_bus

    step power
    for i in $(seq 0 $((CONTROLLERS - 1))); do
        # bluetoothd powers adapters itself (AutoEnable); ask only when it has not yet.
        powered "hci$i" || timeout --foreground 10 btmgmt -i "hci$i" power on >/dev/null 2>&1
        wait_for "hci$i powered" powered "hci$i"
    done
    : > "$W/controllers"
    for i in $(seq 0 $((CONTROLLERS - 1))); do
        echo "hci$i $(address_of "hci$i")" >> "$W/controllers"
    done
}
